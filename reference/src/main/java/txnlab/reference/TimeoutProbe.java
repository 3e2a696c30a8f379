package txnlab.reference;

import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What Kafka's Java client gets when its transaction outlives transaction.timeout.ms (2 s here): it begins a
 * transaction, sends one record, sleeps SLEEP_MS, then commits; if that fails it aborts.  One JSON line: the
 * exception class of each call ("ok" when it returns).
 *
 *   TimeoutProbe BOOTSTRAP TOPIC TID SLEEP_MS
 */
public final class TimeoutProbe {
    private TimeoutProbe() {}

    interface Call { void run() throws Exception; }

    static String outcome(Call c) {
        try {
            c.run();
            return "ok";
        } catch (Exception e) {
            Throwable t = e;
            while (t.getCause() != null && t instanceof java.util.concurrent.ExecutionException) t = t.getCause();
            return t.getClass().getSimpleName();
        }
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("transactional.id", args[2]);
        p.put("transaction.timeout.ms", "2000");
        p.put("delivery.timeout.ms", "2000");
        p.put("request.timeout.ms", "1500");
        p.put("linger.ms", "0");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(args[1], 0, null, "slow")).get();
            Thread.sleep(Long.parseLong(args[3]));
            String commit = outcome(producer::commitTransaction);
            String abort = commit.equals("ok") ? "-" : outcome(producer::abortTransaction);
            System.out.println("{\"commit\":\"" + commit + "\",\"abort\":\"" + abort + "\"}");
        }
    }
}
