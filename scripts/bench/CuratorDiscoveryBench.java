// Curator 5.4 service discovery (curator-x-discovery, Debian's jars with Jackson 2.14),
// run by zk-bench beside our own figures on the same server (`--only discovery
// --peers curator`). Prints key=value lines prefixed with "curator.discovery.".
// The protocol is CuratorBench.java's (ready/done lines, a stdin line to go on).
//
// usage: java -cp ... CuratorDiscoveryBench CONNECT MODE ARGS...
//   discovery lookups|query THREADS SECONDS WARMUP BASE NAME INSTANCES
//                                       one client registers INSTANCES instances of NAME
//                                       (i00, i01, ...; DYNAMIC) under BASE; a second
//                                       client's ServiceDiscovery is asked by THREADS
//                                       threads: "lookups" its ServiceProvider
//                                       (RoundRobinStrategy, started, showing every
//                                       instance) getInstance(), "query" its
//                                       queryForInstances(NAME) (a direct read); after
//                                       WARMUP s "ready" (wait for a line), SECONDS s
//                                       measured, "done" (wait), the figures: operations
//                                       per second and misses (a lookup without an
//                                       instance, a query without every instance)
//   registration BASE NAME ID           a ServiceDiscovery whose thisInstance is NAME/ID
//                                       (DYNAMIC: an ephemeral node BASE/NAME/ID); "ready"
//                                       once registered, then for each line read "session
//                                       ID PASSWORD" (hex) of the client's current session
//                                       (zk-bench expires it and watches the node come back:
//                                       Curator re-registers on RECONNECTED); "quit" ends
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;
import org.apache.zookeeper.ZooKeeper;

public class CuratorDiscoveryBench {
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

    static ServiceDiscovery<Void> discovery(CuratorFramework c, String base, ServiceInstance<Void> self) throws Exception {
        ServiceDiscoveryBuilder<Void> b = ServiceDiscoveryBuilder.builder(Void.class).client(c).basePath(base);
        if (self != null) b = b.thisInstance(self);
        ServiceDiscovery<Void> d = b.build();
        d.start();
        return d;
    }

    interface Op {
        boolean run() throws Exception;
    }

    static void window(String mode, int threads, double seconds, double warmup, String base, String name, int instances)
            throws Exception {
        CuratorFramework reg = client(cs);
        ServiceDiscovery<Void> d = discovery(reg, base, null);
        for (int i = 0; i < instances; i++) {
            d.registerService(ServiceInstance.<Void>builder()
                    .name(name)
                    .id(String.format("i%02d", i))
                    .address("10.0.0." + (i + 1))
                    .port(8080 + i)
                    .build());
        }
        CuratorFramework c = client(cs);
        ServiceDiscovery<Void> q = discovery(c, base, null);
        ServiceProvider<Void> provider = null;
        Op op;
        if (mode.equals("lookups")) {
            ServiceProvider<Void> p = q.serviceProviderBuilder()
                    .serviceName(name)
                    .providerStrategy(new RoundRobinStrategy<Void>())
                    .build();
            p.start();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (p.getAllInstances().size() != instances) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("the provider does not show every instance");
                Thread.sleep(5);
            }
            provider = p;
            op = () -> p.getInstance() != null;
        } else if (mode.equals("query")) {
            op = () -> {
                Collection<ServiceInstance<Void>> all = q.queryForInstances(name);
                return all.size() == instances;
            };
        } else {
            throw new IllegalArgumentException("unknown discovery mode " + mode);
        }
        String key = "curator.discovery." + mode + ".threads_" + threads;
        String units = mode.equals("lookups") ? "lookups" : "queries";
        AtomicInteger phase = new AtomicInteger(0);
        AtomicLong done = new AtomicLong(), missed = new AtomicLong();
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                while (phase.get() < 2) {
                    boolean ok;
                    try {
                        ok = op.run();
                    } catch (Exception e) {
                        ok = false;
                    }
                    if (phase.get() == 1) {
                        done.incrementAndGet();
                        if (!ok) missed.incrementAndGet();
                    }
                }
            });
            th.start();
            ts.add(th);
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
        for (Thread th : ts) th.join();
        in.readLine();
        long n = done.get();
        System.out.printf("%s.%s_per_s=%.0f%n", key, units, n / ((t1 - t0) / 1e9));
        System.out.printf("%s.%s=%d%n", key, units, n);
        System.out.printf("%s.misses=%d%n", key, missed.get());
        System.out.flush();
        if (provider != null) provider.close();
        q.close();
        d.close();
        c.close();
        reg.close();
        System.exit(0);
    }

    static void registration(String base, String name, String id) throws Exception {
        CuratorFramework c = client(cs);
        ServiceInstance<Void> self = ServiceInstance.<Void>builder()
                .name(name)
                .id(id)
                .address("10.0.0.1")
                .port(8080)
                .build();
        ServiceDiscovery<Void> d = discovery(c, base, self);
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
        d.close();
        c.close();
        System.exit(0);
    }

    static String cs;

    public static void main(String[] args) throws Exception {
        cs = args[0];
        switch (args[1]) {
            case "discovery":
                window(args[2], Integer.parseInt(args[3]), Double.parseDouble(args[4]), Double.parseDouble(args[5]),
                        args[6], args[7], Integer.parseInt(args[8]));
                break;
            case "registration":
                registration(args[2], args[3], args[4]);
                break;
            default:
                System.err.println("unknown mode " + args[1]);
                System.exit(2);
        }
    }
}
