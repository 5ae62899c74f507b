// Curator 5.4 lock benchmarks, run by zk-bench beside our own figures on the same
// server. Prints key=value lines prefixed with "curator.".
//
// usage: java -cp ... CuratorBench CONNECT MODE ARGS...
//   latency mutex|semaphore SECONDS     uncontended acquire+release latency
//   handoff mutex|semaphore SESSIONS SECONDS   contended acquisitions per second
//   cycles mutex|semaphore N            N uncontended cycles (zk-bench counts requests)
//   chain mutex|semaphore N             N waiters queued behind a holder, released in turn
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
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

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

    public static void main(String[] args) throws Exception {
        String cs = args[0];
        String mode = args[1];
        switch (mode) {
            case "latency": {
                String kind = args[2];
                double seconds = Double.parseDouble(args[3]);
                CuratorFramework c = client(cs);
                InterProcessLock l = lock(c, kind, "/curator-bench/" + kind);
                for (int i = 0; i < 50; i++) { l.acquire(); l.release(); }
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
                List<CuratorFramework> clients = new ArrayList<>();
                for (int i = 0; i < sessions; i++) clients.add(client(cs));
                AtomicBoolean stop = new AtomicBoolean(false);
                AtomicLong count = new AtomicLong();
                CountDownLatch go = new CountDownLatch(1);
                List<Thread> ts = new ArrayList<>();
                for (CuratorFramework c : clients) {
                    InterProcessLock l = lock(c, kind, "/curator-bench/handoff-" + kind);
                    Thread t = new Thread(() -> {
                        try {
                            go.await();
                            while (!stop.get()) {
                                l.acquire();
                                l.release();
                                count.incrementAndGet();
                            }
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    t.start();
                    ts.add(t);
                }
                long t0 = System.nanoTime();
                go.countDown();
                Thread.sleep((long) (seconds * 1000));
                stop.set(true);
                long n = count.get();
                double secs = (System.nanoTime() - t0) / 1e9;
                for (Thread t : ts) t.join();
                String key = kind.equals("semaphore") ? "semaphore_mutex" : "mutex";
                System.out.printf("curator.%s.handoffs_per_s.sessions_%d=%.0f%n", key, sessions, n / secs);
                for (CuratorFramework c : clients) c.close();
                break;
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
