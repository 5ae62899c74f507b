import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;

/**
 * Prints the connection states Curator reports, for scripts/compare-states.sh, which runs the
 * same fault script against this probe and the Rust one (examples/states_probe.rs).
 *
 * <p>Usage: {@code CuratorStates probe CONNECT SESSION_MS LIFETIME_S}: starts a
 * CuratorFramework with that session timeout and prints, one line each, {@code <ms since start>
 * STATE <NAME>} for every state, and after every connected state {@code <ms> SESSION 0x<id>
 * <password hex>}, so that the script can end the session from outside (server-side expiry, the
 * same for both clients; Curator's {@code injectSessionExpiration} is client-side and is not
 * used). Runs for LIFETIME_S seconds (or until killed), then closes the client.
 *
 * <p>Exit status: 0 on success, 1 on an error, 2 on bad arguments.
 */
public final class CuratorStates {
    private static final long T0 = System.nanoTime();

    private CuratorStates() {}

    private static synchronized void out(String line) {
        System.out.println(((System.nanoTime() - T0) / 1_000_000) + " " + line);
        System.out.flush();
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xff));
        }
        return s.toString();
    }

    private static void probe(String connect, int sessionMs, long lifetimeS) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .retryPolicy(new ExponentialBackoffRetry(1000, 3))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            out("STATE " + state.name());
            if (state.isConnected()) {
                try {
                    ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
                    out("SESSION 0x" + Long.toHexString(zk.getSessionId()) + " " + hex(zk.getSessionPasswd()));
                } catch (Exception e) {
                    out("ERROR " + e);
                }
            }
        });
        client.start();
        Thread.sleep(TimeUnit.SECONDS.toMillis(lifetimeS));
        client.close();
        out("CLOSED");
    }

    public static void main(String[] args) {
        try {
            if (args.length == 4 && args[0].equals("probe")) {
                probe(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]));
            } else {
                System.err.println("usage: CuratorStates probe CONNECT SESSION_MS LIFETIME_S");
                System.exit(2);
            }
        } catch (Exception e) {
            System.err.println("CuratorStates: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }
}
