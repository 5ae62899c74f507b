// Curator 5.4 lock benchmarks, run by zk-bench beside our own figures on the same
// server. Prints key=value lines prefixed with "curator.".
//
// Every timed window is preceded by WARMUP seconds of the same work (JIT warm-up;
// zk-bench passes the same window, warm-up and lock paths it uses for its own run).
//
// usage: java -cp ... CuratorBench CONNECT MODE ARGS...
//   latency mutex|semaphore SECONDS WARMUP PATH   uncontended acquire+release latency
//   handoff mutex|semaphore SESSIONS SECONDS WARMUP PATH [KEY [HOLD_US [THINK_US]]]
//                                       contended acquisitions per second, per-client
//                                       fairness (min/max, Jain's index) and the
//                                       release -> next grant latency (p50/p99)
//   deep THREADS SESSIONS PATH          a holder and THREADS waiters over SESSIONS
//                                       sessions on one mutex; prints "ready" once all
//                                       queued, waits for a stdin line, releases; each
//                                       waiter acquires and releases at once; prints the
//                                       drain time, then "done", waits for a line
//   many LOCKS THREADS PATH WARMUP_LOCKS one client, THREADS threads acquire LOCKS distinct
//                                       mutexes (held all at once), then release them
//   clients N                           what a client costs: threads, memory,
//                                       connect-to-ready and close() time
//   cycles mutex|semaphore N            N uncontended cycles (zk-bench counts requests)
//   chain mutex|semaphore N             N waiters queued behind a holder, released in turn
//   cache latency ROOT LEAVES WARM WRITES SEQ
//                                       a CuratorCache of ROOT (a subtree of LEAVES leaves,
//                                       ROOT/gI/nJ, made by zk-bench) on one client, a second
//                                       client writes leaf SEQ % LEAVES (32 bytes, SEQ counting
//                                       up), one write at a time: the time from before the
//                                       setData to the listener's NODE_CHANGED of it; WARM
//                                       writes, "ready" (wait for a line), WRITES writes,
//                                       "done" (wait), the figures
//   cache start ROOT LEAVES NODES WARM_ROOT
//                                       a cache started and closed on WARM_ROOT, then "ready"
//                                       (wait), a cache of ROOT from start() to initialized(),
//                                       "done" (wait), the time and the memory grown per node
//                                       (RSS and Java heap, after System.gc())
//   counter SESSIONS SECONDS WARMUP PATH RETRY
//                                       SESSIONS clients (a thread each) increment one
//                                       DistributedAtomicLong at PATH (reset to 0 first), RETRY
//                                       exp_100ms_3 (ExponentialBackoffRetry(100, 3)) or
//                                       n_1000_0ms (RetryNTimes(1000, 0)); after WARMUP s
//                                       "ready" (wait for a line), SECONDS s measured, "done"
//                                       (wait), the figures: increments/s that succeeded, those
//                                       not applied, optimistic tries per success, and whether
//                                       the final value equals the successes counted
//   registration PATH                   an EPHEMERAL PersistentNode at PATH; "ready" once
//                                       created, then for each line read "session ID PASSWORD"
//                                       (hex) of the client's current session (zk-bench expires
//                                       it and watches the node come back); "quit" ends
//   barrier MEMBERS WARM ROUNDS PATH    MEMBERS clients (a thread each) pass one
//                                       DistributedDoubleBarrier(PATH, MEMBERS) together: all
//                                       released at once, enter, leave; WARM rounds, "ready"
//                                       (wait), ROUNDS rounds timed from the release to the
//                                       last leave's return, "done" (wait), p50/p99
//   rwherd READERS                      writer W1 holds; READERS/2 readers, a writer W2,
//                                       READERS/2 readers queue (one session each); prints
//                                       "ready", waits for a line on stdin, releases W1,
//                                       prints "released" once the first half holds
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.CyclicBarrier;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.RetryPolicy;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooKeeper;

public class CuratorBench {
    static CuratorFramework client(String cs) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(cs)
                .sessionTimeoutMs(30000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("not connected");
        return c;
    }

    static InterProcessLock lock(CuratorFramework c, String kind, String path) {
        return kind.equals("semaphore") ? new InterProcessSemaphoreMutex(c, path) : new InterProcessMutex(c, path);
    }

    /** Threads of this process, from /proc/self/task. */
    static long tasks() {
        String[] l = new java.io.File("/proc/self/task").list();
        return l == null ? 0 : l.length;
    }

    /** Java heap in use after a collection, in bytes. */
    static long heap() {
        System.gc();
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    /** A field of /proc/self/status in KiB (VmRSS). */
    static long rss() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
        return 0;
    }

    /** THREADS threads take LOCKS distinct mutexes under ROOT, hold them all, then release. */
    static void manyRound(CuratorFramework c, int locks, int threads, String root, boolean report) throws Exception {
        CyclicBarrier allHeld = new CyclicBarrier(threads + 1);
        CyclicBarrier release = new CyclicBarrier(threads + 1);
        CyclicBarrier released = new CyclicBarrier(threads + 1);
        long h0 = heap();
        long rss0 = rss();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int me = t;
            Thread th = new Thread(() -> {
                try {
                    List<InterProcessMutex> mine = new ArrayList<>();
                    for (int i = me; i < locks; i += threads) {
                        InterProcessMutex m = new InterProcessMutex(c, root + "/l" + i);
                        m.acquire();
                        mine.add(m);
                    }
                    allHeld.await();
                    release.await();
                    for (InterProcessMutex m : mine) m.release();
                    released.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            ts.add(th);
        }
        long t0 = System.nanoTime();
        for (Thread th : ts) th.start();
        allHeld.await();
        long t1 = System.nanoTime();
        long h1 = heap();
        long rss1 = rss();
        release.await();
        long t2 = System.nanoTime();
        released.await();
        long t3 = System.nanoTime();
        for (Thread th : ts) th.join();
        if (report) {
            System.out.printf("curator.many.acquires_per_s.locks_%d=%.0f%n", locks, locks / ((t1 - t0) / 1e9));
            System.out.printf("curator.many.releases_per_s.locks_%d=%.0f%n", locks, locks / ((t3 - t2) / 1e9));
            System.out.printf("curator.many.rss_bytes_per_held_lock=%.0f%n", (rss1 - rss0) * 1024.0 / locks);
            System.out.printf("curator.many.java_heap_bytes_per_held_lock=%.0f%n", (h1 - h0) / (double) locks);
        }
    }

    /** A change the cache's listener heard: path, data, System.nanoTime() of the call. */
    static final class Heard {
        final String path;
        final byte[] data;
        final long at;

        Heard(String path, byte[] data, long at) {
            this.path = path;
            this.data = data;
            this.at = at;
        }
    }

    /** A started CuratorCache of ROOT whose NODE_CHANGED events go to HEARD (may be null). */
    static CuratorCache startedCache(CuratorFramework c, String root, LinkedBlockingQueue<Heard> heard) throws Exception {
        CuratorCache cache = CuratorCache.build(c, root);
        CountDownLatch initialized = new CountDownLatch(1);
        cache.listenable().addListener(new CuratorCacheListener() {
            @Override
            public void event(Type type, ChildData oldData, ChildData data) {
                if (type == Type.NODE_CHANGED && heard != null) {
                    long at = System.nanoTime();
                    heard.add(new Heard(data.getPath(), data.getData(), at));
                }
            }

            @Override
            public void initialized() {
                initialized.countDown();
            }
        });
        cache.start();
        if (!initialized.await(600, TimeUnit.SECONDS)) throw new IllegalStateException("the cache of " + root + " did not initialize");
        return cache;
    }

    static String leaf(String root, long i) {
        return root + "/g" + (i / 100) + "/n" + (i % 100);
    }

    /** Writes leaf SEQ % LEAVES and waits for the cache's event of it: ns from before the write. */
    static long writeAndWait(CuratorFramework w, String root, int leaves, long seq, LinkedBlockingQueue<Heard> heard) throws Exception {
        String path = leaf(root, seq % leaves);
        byte[] d = String.format("%032d", seq).getBytes();
        long t0 = System.nanoTime();
        w.setData().forPath(path, d);
        while (true) {
            Heard h = heard.poll(30, TimeUnit.SECONDS);
            if (h == null) throw new IllegalStateException("no event for " + path + " within 30 s");
            if (h.path.equals(path) && java.util.Arrays.equals(h.data, d)) return h.at - t0;
        }
    }

    static void cache(String cs, String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String root = args[3];
        int leaves = Integer.parseInt(args[4]);
        CuratorFramework c = client(cs);
        if (args[2].equals("latency")) {
            int warm = Integer.parseInt(args[5]);
            int writes = Integer.parseInt(args[6]);
            long seq = Long.parseLong(args[7]);
            CuratorFramework w = client(cs);
            LinkedBlockingQueue<Heard> heard = new LinkedBlockingQueue<>();
            CuratorCache cache = startedCache(c, root, heard);
            for (int i = 0; i < warm; i++) writeAndWait(w, root, leaves, ++seq, heard);
            System.out.println("ready");
            System.out.flush();
            in.readLine();
            List<Long> lat = new ArrayList<>();
            for (int i = 0; i < writes; i++) lat.add(writeAndWait(w, root, leaves, ++seq, heard));
            System.out.println("done");
            System.out.flush();
            in.readLine();
            Collections.sort(lat);
            System.out.printf("curator.cache.write_to_event.p50_us.leaves_%d=%.1f%n", leaves,
                    lat.get((int) Math.round((lat.size() - 1) * 0.5)) / 1e3);
            System.out.printf("curator.cache.write_to_event.p99_us.leaves_%d=%.1f%n", leaves,
                    lat.get((int) Math.round((lat.size() - 1) * 0.99)) / 1e3);
            System.out.printf("curator.cache.write_to_event.writes.leaves_%d=%d%n", leaves, lat.size());
            cache.close();
            w.close();
        } else {
            int nodes = Integer.parseInt(args[5]);
            String warmRoot = args[6];
            // Classes, JIT and the client's buffers: one cache started and closed first.
            startedCache(c, warmRoot, null).close();
            long h0 = heap();
            heap();
            long rss0 = rss();
            System.out.println("ready");
            System.out.flush();
            in.readLine();
            long t0 = System.nanoTime();
            CuratorCache cache = startedCache(c, root, null);
            long took = System.nanoTime() - t0;
            System.out.println("done");
            System.out.flush();
            in.readLine();
            heap();
            long h1 = heap();
            long rss1 = rss();
            if (cache.size() != nodes) throw new IllegalStateException("the cache holds " + cache.size() + " nodes, not " + nodes);
            System.out.printf("curator.cache.start_to_initialized_ms.leaves_%d=%.1f%n", leaves, took / 1e6);
            System.out.printf("curator.cache.nodes.leaves_%d=%d%n", leaves, nodes);
            System.out.printf("curator.cache.rss_bytes_per_node.leaves_%d=%.0f%n", leaves, (rss1 - rss0) * 1024.0 / nodes);
            System.out.printf("curator.cache.java_heap_bytes_per_node.leaves_%d=%.0f%n", leaves, (h1 - h0) / (double) nodes);
            cache.close();
        }
        c.close();
        System.out.flush();
        System.exit(0);
    }

    static RetryPolicy counterRetry(String name) {
        switch (name) {
            case "exp_100ms_3": return new ExponentialBackoffRetry(100, 3);
            case "n_1000_0ms": return new RetryNTimes(1000, 0);
            default: throw new IllegalArgumentException("unknown retry " + name);
        }
    }

    static void counter(String cs, String[] a) throws Exception {
        int sessions = Integer.parseInt(a[2]);
        double seconds = Double.parseDouble(a[3]);
        double warmup = Double.parseDouble(a[4]);
        String path = a[5];
        String retry = a[6];
        String key = "curator.counter.sessions_" + sessions + ".retry_" + retry;
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < sessions; i++) clients.add(client(cs));
        DistributedAtomicLong first = new DistributedAtomicLong(clients.get(0), path, counterRetry(retry));
        first.forceSet(0L);
        java.util.concurrent.atomic.AtomicInteger phase = new java.util.concurrent.atomic.AtomicInteger(0);
        AtomicLong applied = new AtomicLong(), notApplied = new AtomicLong(), tries = new AtomicLong(),
                errors = new AtomicLong(), allApplied = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Thread t = new Thread(() -> {
                DistributedAtomicLong n = new DistributedAtomicLong(c, path, counterRetry(retry));
                while (phase.get() < 2) {
                    boolean measured;
                    try {
                        AtomicValue<Long> v = n.increment();
                        measured = phase.get() == 1;
                        if (v.succeeded()) {
                            allApplied.incrementAndGet();
                            if (measured) applied.incrementAndGet();
                        } else if (measured) {
                            notApplied.incrementAndGet();
                        }
                        if (measured) tries.addAndGet(v.getStats().getOptimisticTries());
                    } catch (Exception e) {
                        if (phase.get() == 1) errors.incrementAndGet();
                    }
                }
            });
            t.start();
            ts.add(t);
        }
        Thread.sleep((long) (warmup * 1e3));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        in.readLine();
        phase.set(1);
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1e3));
        phase.set(2);
        long t1 = System.nanoTime();
        System.out.println("done");
        System.out.flush();
        for (Thread t : ts) t.join();
        long fin = first.get().postValue();
        in.readLine();
        double secs = (t1 - t0) / 1e9;
        long ok = applied.get();
        System.out.printf("%s.increments_per_s=%.0f%n", key, ok / secs);
        System.out.printf("%s.applied=%d%n", key, ok);
        System.out.printf("%s.not_applied=%d%n", key, notApplied.get());
        System.out.printf("%s.errors=%d%n", key, errors.get());
        System.out.printf("%s.tries_per_increment=%.2f%n", key, tries.get() / (double) Math.max(ok, 1));
        System.out.printf("%s.final_equals_applied=%b%n", key, fin == allApplied.get());
        System.out.flush();
        for (CuratorFramework c : clients) c.close();
        System.exit(0);
    }

    static void registration(String cs, String[] a) throws Exception {
        String path = a[2];
        CuratorFramework c = client(cs);
        PersistentNode n = new PersistentNode(c, CreateMode.EPHEMERAL, false, path, "svc".getBytes());
        n.start();
        if (!n.waitForInitialCreate(30, TimeUnit.SECONDS)) throw new IllegalStateException("not created");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null && !line.equals("quit")) {
            ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
            StringBuilder pw = new StringBuilder();
            for (byte b : zk.getSessionPasswd()) pw.append(String.format("%02x", b));
            System.out.println("session " + Long.toHexString(zk.getSessionId()) + " " + pw);
            System.out.flush();
        }
        n.close();
        c.close();
        System.exit(0);
    }

    static void barrier(String cs, String[] a) throws Exception {
        int members = Integer.parseInt(a[2]);
        int warm = Integer.parseInt(a[3]);
        int rounds = Integer.parseInt(a[4]);
        String path = a[5];
        String key = "curator.barrier.members_" + members;
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < members; i++) clients.add(client(cs));
        CyclicBarrier start = new CyclicBarrier(members + 1);
        CyclicBarrier end = new CyclicBarrier(members + 1);
        AtomicLong failed = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Thread t = new Thread(() -> {
                try {
                    DistributedDoubleBarrier b = new DistributedDoubleBarrier(c, path, members);
                    for (int r = 0; r < warm + rounds; r++) {
                        start.await();
                        boolean ok = false;
                        try {
                            ok = b.enter(60, TimeUnit.SECONDS) && b.leave(60, TimeUnit.SECONDS);
                        } catch (Exception e) {
                            ok = false;
                        }
                        if (!ok) failed.incrementAndGet();
                        end.await();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            t.start();
            ts.add(t);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        List<Long> lat = new ArrayList<>();
        for (int r = 0; r < warm + rounds; r++) {
            if (r == warm) {
                System.out.println("ready");
                System.out.flush();
                in.readLine();
            }
            start.await();
            long t0 = System.nanoTime();
            end.await();
            if (r >= warm) lat.add(System.nanoTime() - t0);
        }
        System.out.println("done");
        System.out.flush();
        in.readLine();
        Collections.sort(lat);
        System.out.printf("%s.round.p50_us=%.1f%n", key, lat.get((int) Math.round((lat.size() - 1) * 0.5)) / 1e3);
        System.out.printf("%s.round.p99_us=%.1f%n", key, lat.get((int) Math.round((lat.size() - 1) * 0.99)) / 1e3);
        System.out.printf("%s.round.max_us=%.1f%n", key, lat.get(lat.size() - 1) / 1e3);
        System.out.printf("%s.round.n=%d%n", key, lat.size());
        System.out.printf("%s.failed_member_rounds=%d%n", key, failed.get());
        System.out.flush();
        for (Thread t : ts) t.join();
        for (CuratorFramework c : clients) c.close();
        System.exit(0);
    }

    public static void main(String[] args) throws Exception {
        String cs = args[0];
        String mode = args[1];
        switch (mode) {
            case "latency": {
                String kind = args[2];
                double seconds = Double.parseDouble(args[3]);
                double warmup = Double.parseDouble(args[4]);
                String path = args[5];
                CuratorFramework c = client(cs);
                InterProcessLock l = lock(c, kind, path);
                long wend = System.nanoTime() + (long) (warmup * 1e9);
                do { l.acquire(); l.release(); } while (System.nanoTime() < wend);
                List<Long> lat = new ArrayList<>();
                long end = System.nanoTime() + (long) (seconds * 1e9);
                while (System.nanoTime() < end) {
                    long t = System.nanoTime();
                    l.acquire();
                    l.release();
                    lat.add(System.nanoTime() - t);
                }
                Collections.sort(lat);
                String key = kind.equals("semaphore") ? "semaphore_mutex" : "mutex";
                System.out.printf("curator.%s.uncontended_acquire_release.median_us=%.1f%n", key, lat.get(lat.size() / 2) / 1e3);
                System.out.printf("curator.%s.uncontended_acquire_release.p99_us=%.1f%n", key,
                        lat.get((int) Math.round((lat.size() - 1) * 0.99)) / 1e3);
                System.out.printf("curator.%s.uncontended_cycles_per_s=%.0f%n", key, 1e9 / lat.get(lat.size() / 2));
                c.close();
                break;
            }
            case "handoff": {
                String kind = args[2];
                int sessions = Integer.parseInt(args[3]);
                double seconds = Double.parseDouble(args[4]);
                double warmup = Double.parseDouble(args[5]);
                String path = args[6];
                long holdUs = args.length > 8 ? Long.parseLong(args[8]) : 0;
                long thinkUs = args.length > 9 ? Long.parseLong(args[9]) : 0;
                List<CuratorFramework> clients = new ArrayList<>();
                for (int i = 0; i < sessions; i++) clients.add(client(cs));
                AtomicBoolean stop = new AtomicBoolean(false);
                AtomicBoolean timing = new AtomicBoolean(false);
                AtomicLongArray counts = new AtomicLongArray(sessions);
                AtomicLong lastRelease = new AtomicLong(0);
                List<List<Long>> lats = new ArrayList<>();
                CountDownLatch go = new CountDownLatch(1);
                List<Thread> ts = new ArrayList<>();
                for (int i = 0; i < sessions; i++) {
                    final int me = i;
                    InterProcessLock l = lock(clients.get(i), kind, path);
                    List<Long> mine = new ArrayList<>();
                    lats.add(mine);
                    Thread t = new Thread(() -> {
                        try {
                            go.await();
                            while (!stop.get()) {
                                l.acquire();
                                long granted = System.nanoTime();
                                long prev = lastRelease.get();
                                if (timing.get() && prev != 0) mine.add(granted - prev);
                                counts.incrementAndGet(me);
                                if (holdUs > 0) Thread.sleep(holdUs / 1000, (int) (holdUs % 1000) * 1000);
                                lastRelease.set(System.nanoTime());
                                l.release();
                                if (thinkUs > 0) Thread.sleep(thinkUs / 1000, (int) (thinkUs % 1000) * 1000);
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    t.start();
                    ts.add(t);
                }
                go.countDown();
                Thread.sleep((long) (warmup * 1000));
                long[] before = new long[sessions];
                for (int i = 0; i < sessions; i++) before[i] = counts.get(i);
                long t0 = System.nanoTime();
                timing.set(true);
                Thread.sleep((long) (seconds * 1000));
                timing.set(false);
                long[] after = new long[sessions];
                for (int i = 0; i < sessions; i++) after[i] = counts.get(i);
                double secs = (System.nanoTime() - t0) / 1e9;
                stop.set(true);
                for (Thread t : ts) t.join();
                String key = args.length > 7 ? args[7] : kind.equals("semaphore") ? "semaphore_mutex" : "mutex";
                long n = 0, min = Long.MAX_VALUE, max = 0;
                double sq = 0;
                for (int i = 0; i < sessions; i++) {
                    long d = after[i] - before[i];
                    n += d; min = Math.min(min, d); max = Math.max(max, d); sq += (double) d * d;
                }
                String k = "curator." + key + ".handoffs";
                System.out.printf("curator.%s.handoffs_per_s.sessions_%d=%.0f%n", key, sessions, n / secs);
                System.out.printf("%s.min_per_client.sessions_%d=%d%n", k, sessions, min);
                System.out.printf("%s.max_per_client.sessions_%d=%d%n", k, sessions, max);
                System.out.printf("%s.jain.sessions_%d=%.3f%n", k, sessions, sq == 0 ? 0 : (double) n * n / (sessions * sq));
                List<Long> all = new ArrayList<>();
                for (List<Long> m : lats) all.addAll(m);
                Collections.sort(all);
                if (!all.isEmpty()) {
                    System.out.printf("curator.%s.handoff_latency.p50_us.sessions_%d=%.1f%n", key, sessions, all.get(all.size() / 2) / 1e3);
                    System.out.printf("curator.%s.handoff_latency.p99_us.sessions_%d=%.1f%n", key, sessions,
                            all.get((int) Math.round((all.size() - 1) * 0.99)) / 1e3);
                }
                for (CuratorFramework c : clients) c.close();
                break;
            }
            case "deep": {
                int threads = Integer.parseInt(args[2]);
                int sessions = Integer.parseInt(args[3]);
                String path = args[4];
                CuratorFramework hc = client(cs);
                InterProcessMutex holder = new InterProcessMutex(hc, path);
                holder.acquire();
                List<CuratorFramework> clients = new ArrayList<>();
                for (int i = 0; i < sessions; i++) clients.add(client(cs));
                CountDownLatch all = new CountDownLatch(threads);
                AtomicLong lastDone = new AtomicLong();
                List<Thread> ts = new ArrayList<>();
                for (int i = 0; i < threads; i++) {
                    CuratorFramework c = clients.get(i % sessions);
                    Thread t = new Thread(() -> {
                        try {
                            InterProcessMutex l = new InterProcessMutex(c, path);
                            l.acquire();
                            l.release();
                            lastDone.accumulateAndGet(System.nanoTime(), Math::max);
                            all.countDown();
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    t.start();
                    ts.add(t);
                }
                while (holder.getParticipantNodes().size() < threads + 1) Thread.sleep(5);
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                System.out.println("ready");
                System.out.flush();
                in.readLine();
                long t0 = System.nanoTime();
                holder.release();
                all.await();
                System.out.printf("drain_ms=%.1f%n", (lastDone.get() - t0) / 1e6);
                System.out.println("done");
                System.out.flush();
                in.readLine();
                for (CuratorFramework c : clients) c.close();
                hc.close();
                System.exit(0);
            }
            case "many": {
                int locks = Integer.parseInt(args[2]);
                int threads = Integer.parseInt(args[3]);
                String path = args[4];
                int warmLocks = Integer.parseInt(args[5]);
                CuratorFramework c = client(cs);
                // Warm-up: the same work on fewer locks, under another root.
                manyRound(c, warmLocks, threads, path + "-warmup", false);
                manyRound(c, locks, threads, path, true);
                c.close();
                System.exit(0);
            }
            case "clients": {
                int n = Integer.parseInt(args[2]);
                CuratorFramework warm = client(cs);
                InterProcessMutex wm = new InterProcessMutex(warm, "/bench/clients/warm");
                wm.acquire();
                wm.release();
                long h0 = heap();
                long t0 = tasks(), rss0 = rss();
                List<CuratorFramework> clients = new ArrayList<>();
                List<Long> ready = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    long t = System.nanoTime();
                    clients.add(client(cs));
                    ready.add(System.nanoTime() - t);
                }
                long h1 = heap();
                long t1 = tasks(), rss1 = rss();
                for (int i = 0; i < n; i++) {
                    InterProcessMutex m = new InterProcessMutex(clients.get(i), "/bench/clients/l" + i);
                    m.acquire();
                    Thread.sleep(20);
                    m.release();
                }
                long t2 = tasks();
                List<Long> closes = new ArrayList<>();
                for (CuratorFramework c : clients) {
                    long t = System.nanoTime();
                    c.close();
                    closes.add(System.nanoTime() - t);
                }
                Thread.sleep(200);
                long t3 = tasks();
                Collections.sort(ready);
                Collections.sort(closes);
                System.out.printf("curator.clients.threads_per_client.idle=%.2f%n", (t1 - t0) / (double) n);
                System.out.printf("curator.clients.threads_per_client.after_lock=%.2f%n", (t2 - t0) / (double) n);
                System.out.printf("curator.clients.threads_left_after_close=%d%n", Math.max(0, t3 - t0));
                System.out.printf("curator.clients.rss_kib_per_client=%.0f%n", (rss1 - rss0) / (double) n);
                System.out.printf("curator.clients.java_heap_kib_per_client=%.0f%n", (h1 - h0) / 1024.0 / n);
                System.out.printf("curator.clients.connect_to_ready_ms.median=%.2f%n", ready.get(n / 2) / 1e6);
                System.out.printf("curator.clients.close_ms.median=%.2f%n", closes.get(n / 2) / 1e6);
                System.out.printf("curator.clients.close_ms.max=%.2f%n", closes.get(n - 1) / 1e6);
                warm.close();
                System.exit(0);
            }
            case "cycles": {
                String kind = args[2];
                int n = Integer.parseInt(args[3]);
                CuratorFramework c = client(cs);
                InterProcessLock l = lock(c, kind, "/curator-bench/cycles-" + kind);
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                System.out.println("ready");
                System.out.flush();
                in.readLine();
                for (int i = 0; i < n; i++) { l.acquire(); l.release(); }
                System.out.println("done");
                System.out.flush();
                in.readLine();
                c.close();
                break;
            }
            case "chain": {
                // A holder and N waiters (one session each) queue on one lock; after
                // "ready" + a stdin line the holder releases and every waiter takes
                // the lock in turn and releases at once; prints "done" at the end.
                String kind = args[2];
                int n = Integer.parseInt(args[3]);
                String path = "/curator-bench/chain-" + kind;
                CuratorFramework hc = client(cs);
                InterProcessLock holder = lock(hc, kind, path);
                holder.acquire();
                CountDownLatch all = new CountDownLatch(n);
                List<CuratorFramework> clients = new ArrayList<>();
                List<Thread> ts = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    CuratorFramework c = client(cs);
                    clients.add(c);
                    Thread t = new Thread(() -> {
                        try {
                            InterProcessLock l = lock(c, kind, path);
                            l.acquire();
                            l.release();
                            all.countDown();
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    t.start();
                    ts.add(t);
                }
                Thread.sleep(1000); // every waiter queued and watching
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                System.out.println("ready");
                System.out.flush();
                in.readLine();
                holder.release();
                all.await();
                Thread.sleep(200);
                System.out.println("done");
                System.out.flush();
                in.readLine();
                for (CuratorFramework c : clients) c.close();
                hc.close();
                System.exit(0);
            }
            case "cache":
                cache(cs, args);
                break;
            case "counter":
                counter(cs, args);
                break;
            case "registration":
                registration(cs, args);
                break;
            case "barrier":
                barrier(cs, args);
                break;
            case "rwherd": {
                // W1 holds; READERS/2 readers queue; W2 queues; READERS/2 more readers.
                // W1's release can let only the first half proceed.
                int readers = Integer.parseInt(args[2]);
                int half = readers / 2;
                String path = "/curator-bench/rwherd";
                CuratorFramework wc = client(cs);
                InterProcessReadWriteLock w = new InterProcessReadWriteLock(wc, path);
                w.writeLock().acquire();
                CountDownLatch firstHalfHeld = new CountDownLatch(half);
                CountDownLatch finish = new CountDownLatch(1);
                List<CuratorFramework> clients = new ArrayList<>();
                List<Thread> ts = new ArrayList<>();
                for (int stage = 0; stage < 3; stage++) {
                    int count = stage == 1 ? 1 : half;
                    boolean writer = stage == 1;
                    boolean first = stage == 0;
                    for (int i = 0; i < count; i++) {
                        CuratorFramework c = client(cs);
                        clients.add(c);
                        Thread t = new Thread(() -> {
                            try {
                                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
                                InterProcessLock l = writer ? rw.writeLock() : rw.readLock();
                                l.acquire();
                                if (first) firstHalfHeld.countDown();
                                finish.await();
                                l.release();
                            } catch (Exception e) {
                                throw new RuntimeException(e);
                            }
                        });
                        t.start();
                        ts.add(t);
                    }
                    int want = stage == 0 ? half : stage == 1 ? half : 2 * half;
                    if (writer) {
                        while (w.writeLock().getParticipantNodes().size() < 2) Thread.sleep(5);
                    } else {
                        while (w.readLock().getParticipantNodes().size() < want) Thread.sleep(5);
                    }
                }
                Thread.sleep(300); // let every waiter set its watch
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                System.out.println("ready");
                System.out.flush();
                in.readLine();
                w.writeLock().release();
                firstHalfHeld.await();
                Thread.sleep(300); // let late notifications arrive
                System.out.println("released");
                System.out.flush();
                in.readLine();
                for (CuratorFramework c : clients) c.close();
                wc.close();
                System.exit(0);
            }
            default:
                System.err.println("unknown mode " + mode);
                System.exit(2);
        }
    }
}
