import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

/**
 * Curator 5.4's {@link CuratorCache} following a subtree, and a writer of plain Curator
 * framework calls, for the cache interop proof (scripts/cache-interop.sh; the Rust side is
 * examples/cache_follower.rs, the Python writer scripts/interop/kazoo_cache_writer.py, the
 * checker scripts/interop/check_cache.py).
 *
 * <p>Usage: {@code CuratorCacheFollower CONNECT follow PATH} or {@code CuratorCacheFollower
 * CONNECT write}.
 *
 * <p>follow: one line per cache event on stdout, flushed: {@code CREATED path czxid mzxid hex},
 * {@code CHANGED path czxid mzxid hex} (the new data), {@code DELETED path czxid mzxid hex} (the
 * data the cache held), {@code INITIALIZED}; hex is the data in lower-case hex, {@code -} when
 * empty; {@code STATE name} for each connection state change (SUSPENDED, RECONNECTED, ...).
 * A {@code dump} line on stdin, and the end of stdin, print the cache's view: {@code VIEW
 * path czxid mzxid hex} per node, sorted by path, then {@code VIEW-END count}. At the end of
 * stdin the cache and the client close and the process exits 0.
 *
 * <p>write: one command per stdin line, {@code ID OP ARGS}, answered by {@code ACK ID ok
 * RESULT} or {@code ACK ID err MESSAGE}: {@code create PATH HEX} (parents created, empty),
 * {@code create_eph PATH HEX}, {@code create_seq PATH HEX} (RESULT: the path created), {@code
 * set PATH HEX}, {@code delete PATH}, {@code delete_rec PATH} (children first), {@code recreate
 * PATH HEX} (a delete, then a create), {@code txn OP ARGS OP ARGS...} (one transaction of
 * create PATH HEX, set PATH HEX, delete PATH). Exits 0 at the end of stdin.
 *
 * <p>The session timeout is SESSION_MS (env, default 10000).
 */
public final class CuratorCacheFollower {
    private CuratorCacheFollower() {}

    private static final PrintStream OUT =
            new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

    private static synchronized void line(String s) {
        OUT.print(s + "\n");
        OUT.flush();
    }

    static String hex(byte[] data) {
        if (data == null || data.length == 0) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : data) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    private static String node(ChildData d) {
        Stat st = d.getStat();
        return d.getPath() + " " + st.getCzxid() + " " + st.getMzxid() + " " + hex(d.getData());
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: CuratorCacheFollower CONNECT follow PATH | CONNECT write");
            System.exit(2);
        }
        int sessionMs = Integer.parseInt(System.getenv().getOrDefault("SESSION_MS", "10000"));
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
            System.err.println("not connected within 30 s");
            System.exit(1);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (args[1].equals("follow") && args.length == 3) {
            follow(client, args[2], in);
        } else if (args[1].equals("write")) {
            write(client, in);
        } else {
            System.err.println("usage: CuratorCacheFollower CONNECT follow PATH | CONNECT write");
            System.exit(2);
        }
        client.close();
        System.exit(0);
    }

    private static void follow(CuratorFramework client, String path, BufferedReader in) throws Exception {
        client.getConnectionStateListenable().addListener((c, state) -> line("STATE " + state));
        CuratorCache cache = CuratorCache.build(client, path);
        cache.listenable().addListener(new CuratorCacheListener() {
            @Override
            public void event(Type type, ChildData oldData, ChildData data) {
                switch (type) {
                    case NODE_CREATED:
                        line("CREATED " + node(data));
                        break;
                    case NODE_CHANGED:
                        line("CHANGED " + node(data));
                        break;
                    case NODE_DELETED:
                        line("DELETED " + node(oldData));
                        break;
                    default:
                        line("UNKNOWN " + type);
                }
            }

            @Override
            public void initialized() {
                line("INITIALIZED");
            }
        });
        cache.start();
        String l;
        while ((l = in.readLine()) != null) {
            if (l.trim().equals("dump")) {
                dump(cache);
            }
        }
        dump(cache);
        cache.close();
    }

    private static synchronized void dump(CuratorCache cache) {
        Map<String, ChildData> view = new TreeMap<>();
        cache.stream().forEach(d -> view.put(d.getPath(), d));
        StringBuilder sb = new StringBuilder();
        for (ChildData d : view.values()) {
            sb.append("VIEW ").append(node(d)).append('\n');
        }
        sb.append("VIEW-END ").append(view.size());
        line(sb.toString());
    }

    private static void write(CuratorFramework client, BufferedReader in) throws Exception {
        String l;
        while ((l = in.readLine()) != null) {
            String[] a = l.trim().split(" +");
            if (a.length < 2) {
                continue;
            }
            String id = a[0];
            try {
                line("ACK " + id + " ok " + apply(client, a));
            } catch (Exception e) {
                line("ACK " + id + " err " + e.toString().replace('\n', ' '));
            }
        }
    }

    private static String apply(CuratorFramework c, String[] a) throws Exception {
        String op = a[1];
        switch (op) {
            case "create":
                return c.create().creatingParentsIfNeeded().forPath(a[2], unhex(a[3]));
            case "create_eph":
                return c.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(a[2], unhex(a[3]));
            case "create_seq":
                return c.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                        .forPath(a[2], unhex(a[3]));
            case "set":
                c.setData().forPath(a[2], unhex(a[3]));
                return a[2];
            case "delete":
                c.delete().forPath(a[2]);
                return a[2];
            case "delete_rec":
                c.delete().deletingChildrenIfNeeded().forPath(a[2]);
                return a[2];
            case "recreate":
                c.delete().forPath(a[2]);
                return c.create().forPath(a[2], unhex(a[3]));
            case "txn": {
                List<CuratorOp> ops = new ArrayList<>();
                int i = 2;
                while (i < a.length) {
                    switch (a[i]) {
                        case "create":
                            ops.add(c.transactionOp().create().forPath(a[i + 1], unhex(a[i + 2])));
                            i += 3;
                            break;
                        case "set":
                            ops.add(c.transactionOp().setData().forPath(a[i + 1], unhex(a[i + 2])));
                            i += 3;
                            break;
                        case "delete":
                            ops.add(c.transactionOp().delete().forPath(a[i + 1]));
                            i += 2;
                            break;
                        default:
                            throw new IllegalArgumentException("txn: unknown op " + a[i]);
                    }
                }
                c.transaction().forOperations(ops);
                return "-";
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }
}
