package txnlab.reference;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.TopicPartition;

/**
 * The transaction admin calls confluent-kafka's Python AdminClient lacks (DescribeTransactions,
 * ListTransactions, DescribeProducers, AbortTransaction: what kafka-transactions.sh does), through
 * Kafka's own Admin client.  One call per run; the answer is one line of JSON on stdout.
 *
 *   TxnTool BOOTSTRAP describe-transactions TID...
 *   TxnTool BOOTSTRAP list-transactions
 *   TxnTool BOOTSTRAP describe-producers TOPIC PARTITION
 *   TxnTool BOOTSTRAP abort TOPIC PARTITION      (aborts the open transaction of the first active producer)
 *   TxnTool BOOTSTRAP                            (serves: one command a line on stdin, one JSON line each)
 */
public final class TxnTool {
    private TxnTool() {}

    static String q(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : tps) names.add(q(tp.topic() + "-" + tp.partition()));
        names.sort(null);
        return "[" + String.join(",", names) + "]";
    }

    static String producer(ProducerState p) {
        return "{\"producer_id\":" + p.producerId() + ",\"producer_epoch\":" + p.producerEpoch()
            + ",\"last_sequence\":" + p.lastSequence()
            + ",\"coordinator_epoch\":" + p.coordinatorEpoch().orElse(-1)
            + ",\"current_transaction_start_offset\":" + p.currentTransactionStartOffset().orElse(-1) + "}";
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(props)) {
            if (args.length == 1) {
                java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    String[] words = (args[0] + " " + line.trim()).split(" ");
                    try {
                        System.out.println(run(admin, words));
                    } catch (Exception e) {
                        System.out.println("{\"tool_error\":" + q(e.toString()) + "}");
                    }
                    System.out.flush();
                }
                return;
            }
            System.out.println(run(admin, args));
        }
    }

    static String run(Admin admin, String[] args) throws Exception {
        {
            String out;
            switch (args[1]) {
                case "describe-transactions": {
                    List<String> ids = List.of(args).subList(2, args.length);
                    Map<String, String> rows = new TreeMap<>();
                    for (String id : ids) {
                        try {
                            TransactionDescription d = admin.describeTransactions(List.of(id)).description(id)
                                .get(30, TimeUnit.SECONDS);
                            rows.put(id, "{\"state\":" + q(d.state().toString()) + ",\"producer_id\":" + d.producerId()
                                + ",\"producer_epoch\":" + d.producerEpoch()
                                + ",\"transaction_timeout_ms\":" + d.transactionTimeoutMs()
                                + ",\"coordinator_id\":" + d.coordinatorId()
                                + ",\"partitions\":" + partitions(d.topicPartitions()) + "}");
                        } catch (java.util.concurrent.ExecutionException e) {
                            rows.put(id, "{\"error\":" + q(e.getCause().getClass().getSimpleName()) + "}");
                        }
                    }
                    List<String> parts = new ArrayList<>();
                    rows.forEach((k, v) -> parts.add(q(k) + ":" + v));
                    out = "{" + String.join(",", parts) + "}";
                    break;
                }
                case "list-transactions": {
                    Collection<TransactionListing> all = admin.listTransactions().all().get(30, TimeUnit.SECONDS);
                    List<String> rows = new ArrayList<>();
                    for (TransactionListing l : all) {
                        rows.add("{\"transactional_id\":" + q(l.transactionalId()) + ",\"producer_id\":"
                            + l.producerId() + ",\"state\":" + q(l.state().toString()) + "}");
                    }
                    rows.sort(null);
                    out = "[" + String.join(",", rows) + "]";
                    break;
                }
                case "describe-producers": {
                    TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
                    PartitionProducerState st = admin.describeProducers(List.of(tp)).partitionResult(tp)
                        .get(30, TimeUnit.SECONDS);
                    List<String> rows = new ArrayList<>();
                    for (ProducerState p : st.activeProducers()) rows.add(producer(p));
                    out = "[" + String.join(",", rows) + "]";
                    break;
                }
                case "abort": {
                    TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
                    PartitionProducerState st = admin.describeProducers(List.of(tp)).partitionResult(tp)
                        .get(30, TimeUnit.SECONDS);
                    String done = "null";
                    for (ProducerState p : st.activeProducers()) {
                        if (p.currentTransactionStartOffset().isPresent()) {
                            admin.abortTransaction(new AbortTransactionSpec(tp, p.producerId(),
                                (short) p.producerEpoch(), p.coordinatorEpoch().orElse(-1))).all()
                                .get(30, TimeUnit.SECONDS);
                            done = producer(p);
                            break;
                        }
                    }
                    out = "{\"aborted\":" + done + "}";
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown command " + args[1]);
            }
            return out;
        }
    }
}
