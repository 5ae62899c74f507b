// Curator 5.4 LeaderLatch failover, run by zk-bench (`--only failover --peers curator`) right
// after the same scenario of ours (crates/zk-bench/src/failover.rs), on the same server. Prints
// key=value lines prefixed with "curator.failover." and speaks a line protocol on stdin/stdout
// where zk-bench counts the server's notifications and requests or freezes a connection.
//
// usage: java -cp ... CuratorLeaderBench CONNECT MODE ARGS...
//   close N REPS WARMUP SESSION_MS PATH
//       N participants, each a LeaderLatch on its own client (session). WARMUP failovers, then
//       prints "ready" and waits for a line; then REPS times: the leader calls close(); the time
//       from the close() call to the next leader's LeaderLatchListener.isLeader() is one
//       sample; the closed participant rejoins with a new latch on its client and the next
//       failover starts once every participant's node is back. Around each timed failover
//       prints "before" and "after" and waits for a line (zk-bench counts the requests of the
//       failover alone). Prints "done", waits for a line, prints the figures.
//   kill N REPS SESSION_MS PATH CS1,CS2,...,CSN
//       as close, but participant i connects to CSi (a fault proxy of zk-bench's); each time
//       it prints "freeze I" for the leader I and waits for a line (zk-bench froze I's proxy:
//       its session will expire on the server's clock); the time from that line to the next
//       isLeader() is one sample; prints "thaw I", waits for a line, closes I's latch and
//       client and rejoins on a new client. Prints the figures.
//   idle N SESSION_MS PATH
//       N participants on N clients; once every node is there (and 2 s more), prints "ready",
//       waits for a line (zk-bench counts the server's requests meanwhile), closes everything,
//       prints "done".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLeaderBench {
    static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in));

    /** (participant index, System.nanoTime()) of each isLeader(). */
    static final LinkedBlockingQueue<long[]> ELECTED = new LinkedBlockingQueue<>();

    static CuratorFramework client(String cs, int sessionMs) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(cs)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(Math.min(sessionMs, 10000))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
        return c;
    }

    static LeaderLatch latch(CuratorFramework c, String path, int i) throws Exception {
        LeaderLatch l = new LeaderLatch(c, path, "p" + i);
        l.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                ELECTED.add(new long[] {i, System.nanoTime()});
            }

            @Override
            public void notLeader() {}
        });
        l.start();
        return l;
    }

    static void line() throws Exception {
        if (IN.readLine() == null) throw new IllegalStateException("stdin closed");
    }

    static int leaderOf(List<LeaderLatch> ls) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < end) {
            for (int i = 0; i < ls.size(); i++) if (ls.get(i).hasLeadership()) return i;
            Thread.sleep(1);
        }
        throw new IllegalStateException("no leader within 60 s");
    }

    static void awaitParticipants(LeaderLatch l, int n) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (l.getParticipants().size() != n) {
            if (System.nanoTime() > end) throw new IllegalStateException("participants != " + n);
            Thread.sleep(1);
        }
    }

    /** The next isLeader() of a participant other than old, after t0: its delay in ns. */
    static long nextLeader(int old, long t0) throws Exception {
        while (true) {
            long[] e = ELECTED.poll(120, TimeUnit.SECONDS);
            if (e == null) throw new IllegalStateException("no new leader within 120 s");
            if (e[0] != old && e[1] >= t0) return e[1] - t0;
        }
    }

    static void report(String key, List<Long> ns) {
        Collections.sort(ns);
        long p50 = ns.get((int) Math.round((ns.size() - 1) * 0.5));
        long p99 = ns.get((int) Math.round((ns.size() - 1) * 0.99));
        System.out.printf("curator.failover.%s.p50_us=%.1f%n", key, p50 / 1e3);
        System.out.printf("curator.failover.%s.p99_us=%.1f%n", key, p99 / 1e3);
        System.out.printf("curator.failover.%s.max_us=%.1f%n", key, ns.get(ns.size() - 1) / 1e3);
        System.out.printf("curator.failover.%s.failovers=%d%n", key, ns.size());
    }

    public static void main(String[] a) throws Exception {
        String cs = a[0];
        switch (a[1]) {
            case "close": {
                int n = Integer.parseInt(a[2]), reps = Integer.parseInt(a[3]), warm = Integer.parseInt(a[4]);
                int sessionMs = Integer.parseInt(a[5]);
                String path = a[6];
                List<CuratorFramework> cs_ = new ArrayList<>();
                List<LeaderLatch> ls = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    cs_.add(client(cs, sessionMs));
                    ls.add(latch(cs_.get(i), path, i));
                    awaitParticipants(ls.get(0), i + 1);
                }
                List<Long> ns = new ArrayList<>(), calls = new ArrayList<>();
                for (int r = 0; r < warm + reps; r++) {
                    if (r == warm) {
                        System.out.println("ready");
                        System.out.flush();
                        line();
                        ns.clear();
                        calls.clear();
                    }
                    int i = leaderOf(ls);
                    ELECTED.clear();
                    if (r >= warm) {
                        System.out.println("before");
                        System.out.flush();
                        line();
                    }
                    long t0 = System.nanoTime();
                    ls.get(i).close();
                    calls.add(System.nanoTime() - t0);
                    ns.add(nextLeader(i, t0));
                    if (r >= warm) {
                        System.out.println("after");
                        System.out.flush();
                        line();
                    }
                    ls.set(i, latch(cs_.get(i), path, i));
                    awaitParticipants(ls.get(i), n);
                }
                System.out.println("done");
                System.out.flush();
                line();
                report("close_n" + n, ns);
                report("close_n" + n + ".close_call", calls);
                for (LeaderLatch l : ls) l.close();
                for (CuratorFramework c : cs_) c.close();
                break;
            }
            case "kill": {
                int n = Integer.parseInt(a[2]), reps = Integer.parseInt(a[3]), sessionMs = Integer.parseInt(a[4]);
                String path = a[5];
                String[] proxies = a[6].split(",");
                List<CuratorFramework> cs_ = new ArrayList<>();
                List<LeaderLatch> ls = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    cs_.add(client(proxies[i], sessionMs));
                    ls.add(latch(cs_.get(i), path, i));
                    awaitParticipants(ls.get(0), i + 1);
                }
                List<Long> ns = new ArrayList<>();
                for (int r = 0; r < reps; r++) {
                    int i = leaderOf(ls);
                    ELECTED.clear();
                    System.out.println("freeze " + i);
                    System.out.flush();
                    line();
                    long t0 = System.nanoTime();
                    ns.add(nextLeader(i, t0));
                    System.out.println("thaw " + i);
                    System.out.flush();
                    line();
                    ls.get(i).close();
                    cs_.get(i).close();
                    cs_.set(i, client(proxies[i], sessionMs));
                    ls.set(i, latch(cs_.get(i), path, i));
                    awaitParticipants(ls.get(i), n);
                }
                report("kill_n" + n + "_session_" + sessionMs + "ms", ns);
                for (LeaderLatch l : ls) l.close();
                for (CuratorFramework c : cs_) c.close();
                System.out.println("done");
                System.out.flush();
                break;
            }
            case "idle": {
                int n = Integer.parseInt(a[2]), sessionMs = Integer.parseInt(a[3]);
                String path = a[4];
                List<CuratorFramework> cs_ = new ArrayList<>();
                List<LeaderLatch> ls = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    cs_.add(client(cs, sessionMs));
                    ls.add(latch(cs_.get(i), path, i));
                }
                awaitParticipants(ls.get(0), n);
                Thread.sleep(2000);
                System.out.println("ready");
                System.out.flush();
                line();
                for (LeaderLatch l : ls) l.close();
                for (CuratorFramework c : cs_) c.close();
                System.out.println("done");
                System.out.flush();
                break;
            }
            default:
                throw new IllegalArgumentException("mode " + a[1]);
        }
        System.exit(0);
    }
}
