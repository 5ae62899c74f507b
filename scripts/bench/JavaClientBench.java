// Benchmarks Apache ZooKeeper's own Java client (Debian's zookeeper.jar) so that
// our Rust client can be compared side by side against the same server.
//
// usage: java -cp ... JavaClientBench CONNECT_STRING SECONDS
// prints key=value lines (the same keys as benches/client.rs):
//   java.create_delete_pairs_per_s.threads_N   create+delete pairs, N threads sharing one handle
//   java.get_children_per_s.threads_N          getChildren, N threads sharing one handle
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class JavaClientBench {
    interface Op {
        void run(int thread, long i) throws Exception;
    }

    /** Runs op from `threads` threads sharing one handle for `seconds`; returns ops/s. */
    static double run(int threads, double seconds, Op op) throws Exception {
        AtomicBoolean stop = new AtomicBoolean(false);
        AtomicLong count = new AtomicLong();
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int tt = t;
            ts[t] = new Thread(() -> {
                long c = 0;
                try {
                    while (!stop.get()) {
                        op.run(tt, c);
                        c++;
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                count.addAndGet(c);
            });
        }
        long s0 = System.nanoTime();
        for (Thread t : ts) t.start();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread t : ts) t.join();
        return count.get() / ((System.nanoTime() - s0) / 1e9);
    }

    public static void main(String[] args) throws Exception {
        String cs = args[0];
        double seconds = Double.parseDouble(args[1]);
        String root = args.length > 2 ? args[2] : "/bench";
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(cs, 30000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
        });
        connected.await();
        try {
            zk.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException ignored) {
        }
        try {
            zk.create(root + "/kids", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException ignored) {
        }
        for (int i = 0; i < 10; i++) {
            try {
                zk.create(root + "/kids/k" + i, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException ignored) {
            }
        }
        // warm-up
        for (int i = 0; i < 200; i++) zk.getChildren(root + "/kids", false);
        try {
            zk.create(root + "/java", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException ignored) {
        }
        final String cd = root + "/java";
        final String kids = root + "/kids";
        System.out.printf("java.create_delete_pairs_per_s.threads_1=%.0f%n",
                run(1, seconds, (t, i) -> { String p = cd + "/n" + t + "-" + i; zk.create(p, new byte[] {'x'}, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT); zk.delete(p, -1); }));
        for (int threads : new int[] {1, 8, 32}) {
            System.out.printf("java.get_children_per_s.threads_%d=%.0f%n", threads,
                    run(threads, seconds, (t, i) -> zk.getChildren(kids, false)));
        }
        for (int threads : new int[] {8, 32}) {
            System.out.printf("java.create_delete_pairs_per_s.threads_%d=%.0f%n", threads,
                    run(threads, seconds, (t, i) -> { String p = cd + "/n" + t + "-" + i; zk.create(p, new byte[] {'x'}, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT); zk.delete(p, -1); }));
        }
        zk.close();
    }
}
