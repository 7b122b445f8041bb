// Test tooling (not part of the product): one OS process holding one or more real Kafka consumers
// (kafka-clients of whatever version is on the classpath), driven by a scenario script of JSON lines on
// standard input and reporting what happened as JSON lines on standard output. Compiled by
// simulator/realkafka/jars.py against the oldest supported kafka-clients; only API present in 2.7+ is
// used, so the same classes run against every client version.
//
// Input (one op a line; the harness writes them at the scenario's times):
//   {"op":"start","config":{...consumer configs...},"topics":["t"],"consumers":1,
//    "processing_ms":0,"commit":"auto|sync|async|none","poll_ms":100}
//   "assign_delay_ms":N in a start op: with partition.assignment.strategy=ScenarioClient$SlowRangeAssignor
//   (range) or ScenarioClient$SlowCooperativeAssignor (cooperative-sticky), the group's leader waits N ms
//   before assigning (a slow assignor)
//   {"op":"processing","ms":N}   sleep N ms after every poll (slow processing)
//   {"op":"stall","ms":N}        one pause of N ms between two polls (no poll at all meanwhile)
//   {"op":"commit"}              one synchronous commit of the positions now
//   {"op":"rebalance"}           enforceRebalance() on every consumer (2.6+)
//   {"op":"close"}               close every consumer (LeaveGroup) and exit 0
// Output events: {"t":epoch_ms,"consumer":i,"event":"...",...}: ready, assigned, revoked, lost,
// committed, commit_failed, poll_error, closed, exit.
// A kill -9 of this process is how a scenario crashes a client: nothing is flushed or left.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ScenarioClient {
    private static final Object OUT = new Object();

    /** The range assignment, computed after a pause: a leader whose assignor is slow (an assignor that
     *  asks an outside system, or a large group's sticky computation). Runs in the leader's poll. */
    public static final class SlowRangeAssignor extends org.apache.kafka.clients.consumer.RangeAssignor {
        static volatile long delayMs;

        @Override
        public GroupAssignment assign(org.apache.kafka.common.Cluster metadata, GroupSubscription subscription) {
            pause(delayMs);
            return super.assign(metadata, subscription);
        }
    }

    /** The cooperative-sticky assignment after the same pause (members keep their partitions meanwhile). */
    public static final class SlowCooperativeAssignor
            extends org.apache.kafka.clients.consumer.CooperativeStickyAssignor {
        @Override
        public GroupAssignment assign(org.apache.kafka.common.Cluster metadata, GroupSubscription subscription) {
            pause(SlowRangeAssignor.delayMs);
            return super.assign(metadata, subscription);
        }
    }

    static void pause(long ms) {
        emit(-1, "assigning", kv("delay_ms", ms));
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void emit(int consumer, String event, Map<String, Object> extra) {
        StringBuilder b = new StringBuilder();
        b.append("{\"t\":").append(System.currentTimeMillis());
        b.append(",\"consumer\":").append(consumer);
        b.append(",\"event\":").append(Json.quote(event));
        if (extra != null) {
            for (Map.Entry<String, Object> e : extra.entrySet()) {
                b.append(',').append(Json.quote(e.getKey())).append(':').append(Json.write(e.getValue()));
            }
        }
        b.append('}');
        synchronized (OUT) {
            System.out.println(b);
            System.out.flush();
        }
    }

    static Map<String, Object> kv(Object... pairs) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) m.put((String) pairs[i], pairs[i + 1]);
        return m;
    }

    static List<String> names(Collection<TopicPartition> parts) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : parts) out.add(tp.topic() + "-" + tp.partition());
        out.sort(null);
        return out;
    }

    /** One consumer and the thread that polls it. */
    static final class Worker implements Runnable {
        final int index;
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<String> topics;
        final String commitMode;
        final long pollMs;
        final AtomicLong processingMs;
        final AtomicLong stallMs = new AtomicLong(0);
        final AtomicBoolean commitNow = new AtomicBoolean(false);
        final AtomicBoolean rebalanceNow = new AtomicBoolean(false);
        final AtomicBoolean closing = new AtomicBoolean(false);
        final CountDownLatch closed = new CountDownLatch(1);

        Worker(int index, Properties props, List<String> topics, String commitMode, long pollMs, long processingMs) {
            this.index = index;
            this.consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.topics = topics;
            this.commitMode = commitMode;
            this.pollMs = pollMs;
            this.processingMs = new AtomicLong(processingMs);
        }

        String memberId() {
            try {
                return consumer.groupMetadata().memberId();
            } catch (RuntimeException e) {
                return null;
            }
        }

        Integer generation() {
            try {
                return consumer.groupMetadata().generationId();
            } catch (RuntimeException e) {
                return null;
            }
        }

        @Override
        public void run() {
            consumer.subscribe(topics, new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    emit(index, "revoked", kv("partitions", names(partitions), "member_id", memberId(),
                            "generation", generation()));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    emit(index, "assigned", kv("partitions", names(partitions), "member_id", memberId(),
                            "generation", generation()));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    emit(index, "lost", kv("partitions", names(partitions), "member_id", memberId(),
                            "generation", generation()));
                }
            });
            emit(index, "ready", kv("topics", topics));
            try {
                while (!closing.get()) {
                    long stall = stallMs.getAndSet(0);
                    if (stall > 0) {
                        emit(index, "stall_start", kv("ms", stall));
                        sleep(stall);
                        emit(index, "stall_end", kv("ms", stall));
                    }
                    if (rebalanceNow.getAndSet(false)) {
                        consumer.enforceRebalance();
                        emit(index, "enforce_rebalance", null);
                    }
                    int records;
                    try {
                        records = consumer.poll(Duration.ofMillis(pollMs)).count();
                    } catch (WakeupException e) {
                        continue;
                    } catch (RuntimeException e) {
                        // what an application's poll loop does with an exception from poll: it stops
                        // (fenced, group full, bad session timeout ...); the process lives on, idle,
                        // until the scenario closes or kills it
                        emit(index, "poll_error", kv("error", e.getClass().getSimpleName(), "message",
                                String.valueOf(e.getMessage())));
                        while (!closing.get()) sleep(50);
                        break;
                    }
                    long processing = processingMs.get();
                    if (processing > 0) sleep(processing);
                    if (commitNow.getAndSet(false) || ("sync".equals(commitMode) && records > 0)) {
                        commitSync();
                    } else if ("async".equals(commitMode) && records > 0) {
                        consumer.commitAsync((offsets, err) -> {
                            if (err != null) {
                                emit(index, "commit_failed", kv("error", err.getClass().getSimpleName()));
                            }
                        });
                    }
                }
                emit(index, "closing", kv("member_id", memberId(), "generation", generation()));
                consumer.close(Duration.ofSeconds(30));
                emit(index, "closed", null);
            } finally {
                closed.countDown();
            }
        }

        void commitSync() {
            try {
                consumer.commitSync(Duration.ofSeconds(30));
                emit(index, "committed", kv("generation", generation()));
            } catch (RuntimeException e) {
                emit(index, "commit_failed", kv("error", e.getClass().getSimpleName(), "message",
                        String.valueOf(e.getMessage())));
            }
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public static void main(String[] args) throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        List<Worker> workers = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) continue;
            Map<String, Object> op = Json.object(line);
            String name = (String) op.get("op");
            switch (name) {
                case "start": {
                    @SuppressWarnings("unchecked")
                    Map<String, Object> config = (Map<String, Object>) op.get("config");
                    @SuppressWarnings("unchecked")
                    List<Object> topicList = (List<Object>) op.get("topics");
                    List<String> topics = new ArrayList<>();
                    for (Object t : topicList) topics.add((String) t);
                    int n = ((Number) op.getOrDefault("consumers", 1L)).intValue();
                    String commit = (String) op.getOrDefault("commit", "auto");
                    long pollMs = ((Number) op.getOrDefault("poll_ms", 100L)).longValue();
                    long processing = ((Number) op.getOrDefault("processing_ms", 0L)).longValue();
                    SlowRangeAssignor.delayMs = ((Number) op.getOrDefault("assign_delay_ms", 0L)).longValue();
                    // built first, started together: a burst of joins is as close in time as threads allow
                    List<Worker> batch = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        Properties props = new Properties();
                        for (Map.Entry<String, Object> e : config.entrySet()) {
                            props.put(e.getKey(), String.valueOf(e.getValue()).replace("{i}",
                                    String.valueOf(workers.size() + i)));
                        }
                        batch.add(new Worker(workers.size() + i, props, topics, commit, pollMs, processing));
                    }
                    for (Worker w : batch) {
                        Thread t = new Thread(w, "scenario-consumer-" + w.index);
                        workers.add(w);
                        threads.add(t);
                    }
                    for (int i = threads.size() - batch.size(); i < threads.size(); i++) threads.get(i).start();
                    break;
                }
                case "processing":
                    for (Worker w : workers) w.processingMs.set(((Number) op.get("ms")).longValue());
                    emit(-1, "processing", kv("ms", op.get("ms")));
                    break;
                case "stall":
                    for (Worker w : select(workers, op)) w.stallMs.set(((Number) op.get("ms")).longValue());
                    break;
                case "commit":
                    for (Worker w : select(workers, op)) w.commitNow.set(true);
                    break;
                case "rebalance":
                    for (Worker w : select(workers, op)) w.rebalanceNow.set(true);
                    break;
                case "close": {
                    List<Worker> targets = select(workers, op);
                    for (Worker w : targets) {
                        w.closing.set(true);
                        w.consumer.wakeup();
                    }
                    for (Worker w : targets) w.closed.await();
                    if (targets.size() == workers.size()) {
                        emit(-1, "exit", null);
                        System.exit(0);
                    }
                    break;
                }
                default:
                    emit(-1, "bad_op", kv("op", name));
            }
        }
        // standard input closed: the harness is gone; leave like a closed application
        for (Worker w : workers) {
            w.closing.set(true);
            w.consumer.wakeup();
        }
        for (Worker w : workers) w.closed.await();
        emit(-1, "exit", null);
    }

    static List<Worker> select(List<Worker> workers, Map<String, Object> op) {
        Object which = op.get("consumer");
        if (which == null) return workers;
        List<Worker> out = new ArrayList<>();
        out.add(workers.get(((Number) which).intValue()));
        return out;
    }

    /** The little JSON this program needs: objects, arrays, strings, numbers, booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> object(String text) {
            Json p = new Json(text);
            Object v = p.value();
            if (!(v instanceof Map)) throw new IllegalArgumentException("not a JSON object: " + text);
            return (Map<String, Object>) v;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    i++; // ':'
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') return m;
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') return l;
                }
            }
            if (c == '"') return string();
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String num = s.substring(start, i);
            if (num.contains(".") || num.contains("e") || num.contains("E")) return Double.valueOf(num);
            return Long.valueOf(num);
        }

        private String string() {
            StringBuilder b = new StringBuilder();
            i++; // opening quote
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n': b.append('\n'); break;
                        case 't': b.append('\t'); break;
                        case 'r': b.append('\r'); break;
                        case 'b': b.append('\b'); break;
                        case 'f': b.append('\f'); break;
                        case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                        default: b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
        }

        static String quote(String v) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : v.toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            return b.append('"').toString();
        }

        static String write(Object v) {
            if (v == null) return "null";
            if (v instanceof String) return quote((String) v);
            if (v instanceof Number || v instanceof Boolean) return String.valueOf(v);
            if (v instanceof Collection) {
                StringBuilder b = new StringBuilder("[");
                Iterator<?> it = ((Collection<?>) v).iterator();
                while (it.hasNext()) {
                    b.append(write(it.next()));
                    if (it.hasNext()) b.append(',');
                }
                return b.append(']').toString();
            }
            return quote(String.valueOf(v));
        }
    }

    private ScenarioClient() {}
}
