// Benchmarks Apache ZooKeeper's own Java client (Debian's zookeeper.jar) so that
// our Rust client can be compared side by side against the same server.
//
// usage: java -cp ... JavaClientBench CONNECT_STRING SECONDS
// prints key=value lines:
//   java.create_delete_pairs_per_s   sequential create+delete pairs, one thread
//   java.get_children_per_s          sequential getChildren, one thread
//   java.pipelined_ops_per_s.threads_N  getData from N threads sharing one handle
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class JavaClientBench {
    public static void main(String[] args) throws Exception {
        String cs = args[0];
        double seconds = Double.parseDouble(args[1]);
        String root = args.length > 2 ? args[2] : "/javabench";
        long runNanos = (long) (seconds * 1e9);
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(cs, 30000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
        });
        connected.await();
        try {
            zk.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException ignored) {
        }
        for (int i = 0; i < 10; i++) {
            try {
                zk.create(root + "/child-" + i, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException ignored) {
            }
        }
        // warm-up
        for (int i = 0; i < 200; i++) zk.getChildren(root, false);

        long n = 0, t0 = System.nanoTime();
        while (System.nanoTime() - t0 < runNanos) {
            String p = zk.create(root + "/n-", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL);
            zk.delete(p, -1);
            n++;
        }
        System.out.printf("java.create_delete_pairs_per_s=%.0f%n", n / ((System.nanoTime() - t0) / 1e9));

        n = 0;
        t0 = System.nanoTime();
        while (System.nanoTime() - t0 < runNanos) {
            zk.getChildren(root, false);
            n++;
        }
        System.out.printf("java.get_children_per_s=%.0f%n", n / ((System.nanoTime() - t0) / 1e9));

        for (int threads : new int[] {8, 32}) {
            AtomicBoolean stop = new AtomicBoolean(false);
            AtomicLong count = new AtomicLong();
            Thread[] ts = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                ts[t] = new Thread(() -> {
                    long c = 0;
                    try {
                        while (!stop.get()) {
                            zk.getData(root, false, null);
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
            System.out.printf("java.pipelined_ops_per_s.threads_%d=%.0f%n", threads, count.get() / ((System.nanoTime() - s0) / 1e9));
        }
        zk.close();
    }
}
