package txnlab.reference;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A transactional copier on Kafka's own Java client (the reference implementation of the transactional
 * producer): reads IN-0 read_committed from the group's committed offset, writes each value upper-cased to
 * OUT-0 and commits the consumed offsets inside the same transaction, BATCH records per transaction.
 *
 *   Copier BOOTSTRAP IN OUT GROUP TID TOTAL BATCH MODE
 *
 * MODE plain: copy TOTAL records.  MODE fence: in the second transaction a second producer with the same
 * transactional.id calls initTransactions; the first one's commit is fenced and the second one copies the
 * rest.  MODE failover and failover-after-prepare: around the second commit it prints "PAUSE before-commit" and,
 * once the commit returned, "PAUSE after-commit", and each time waits for a line on stdin (the test kills the
 * transaction coordinator's broker at one of them: before the commit, that is mid-transaction; or after it, when
 * the decision is durable in __transaction_state but the markers may not be written yet), then goes on.  One JSON
 * line on stdout: what happened, the transaction's epoch after each commit (DescribeTransactions, -1 where the
 * cluster does not serve it), and the offset committed for IN-0.
 */
public final class Copier {
    private Copier() {}

    static KafkaProducer<String, String> producer(String bootstrap, String tid) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("delivery.timeout.ms", "60000");
        p.put("request.timeout.ms", "10000");
        return new KafkaProducer<>(p);
    }

    static void pause(BufferedReader stdin, String where) throws java.io.IOException {
        System.out.println("PAUSE " + where);
        System.out.flush();
        if (stdin.readLine() == null) throw new IllegalStateException("stdin closed at " + where);
    }

    /**
     * The transaction's producer epoch now (DescribeTransactions), -1 on a cluster that does not serve it.
     * Each attempt is a new Admin client: Kafka's Admin keeps a coordinator it has looked up and,
     * when that broker was killed, asks it until the call times out, so a new client is what looks it up again
     * (the new coordinator takes over once the controller has fenced the dead broker).
     */
    static int epoch(Properties a, String tid) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try (Admin admin = Admin.create(a)) {
                return admin.describeTransactions(List.of(tid)).description(tid).get(60, TimeUnit.SECONDS)
                    .producerEpoch();
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof UnsupportedVersionException) return -1;
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.RetriableException) || attempt == 10) {
                    throw e;
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], in = args[1], out = args[2], group = args[3], tid = args[4];
        int total = Integer.parseInt(args[5]), batch = Integer.parseInt(args[6]);
        String mode = args[7];
        TopicPartition src = new TopicPartition(in, 0);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        Properties a = new Properties();
        a.put("bootstrap.servers", bootstrap);
        a.put("request.timeout.ms", "5000");
        a.put("default.api.timeout.ms", "10000");
        List<String> events = new ArrayList<>();
        List<Integer> epochs = new ArrayList<>();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(List.of(src));
            KafkaProducer<String, String> producer = producer(bootstrap, tid);
            producer.initTransactions();
            int copied = 0, txn = 0;
            boolean describable = true;
            while (copied < total) {
                List<ConsumerRecord<String, String>> records = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 20000;
                while (records.size() < batch && System.currentTimeMillis() < deadline) {
                    ConsumerRecords<String, String> got = consumer.poll(Duration.ofMillis(200));
                    for (ConsumerRecord<String, String> r : got) {
                        if (records.size() < batch) records.add(r);
                    }
                    if (records.size() > 0 && records.size() < batch && got.isEmpty()) break;
                }
                if (records.isEmpty()) break;
                long next = records.get(records.size() - 1).offset() + 1;
                consumer.seek(src, next);
                txn++;
                producer.beginTransaction();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                offsets.put(src, new OffsetAndMetadata(next));
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (txn == 2 && mode.equals("fence")) {
                    KafkaProducer<String, String> successor = producer(bootstrap, tid);
                    successor.initTransactions();
                    try {
                        producer.commitTransaction();
                        events.add("zombie committed");
                    } catch (ProducerFencedException e) {
                        events.add("fenced: " + e.getClass().getSimpleName());
                    }
                    producer.close(Duration.ZERO);
                    producer = successor;
                    OffsetAndMetadata committed = consumer.committed(java.util.Set.of(src)).get(src);
                    consumer.seek(src, committed == null ? 0 : committed.offset());
                    continue;
                }
                boolean pause = txn == 2 && mode.startsWith("failover");
                if (pause) {
                    pause(stdin, "before-commit");
                }
                producer.commitTransaction();
                if (pause) {
                    pause(stdin, "after-commit");
                }
                copied += records.size();
                int epoch = describable ? epoch(a, tid) : -1;
                describable = epoch != -1;
                epochs.add(epoch);
            }
            producer.close();
            OffsetAndMetadata committed = consumer.committed(java.util.Set.of(src)).get(src);
            StringBuilder ev = new StringBuilder();
            for (String e : events) ev.append(ev.length() == 0 ? "" : ",").append("\"").append(e).append("\"");
            System.out.println("{\"copied\":" + copied + ",\"events\":[" + ev + "],\"epochs\":" + epochs
                + ",\"committed\":" + (committed == null ? -1 : committed.offset()) + "}");
        }
    }
}
