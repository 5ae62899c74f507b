import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import java.util.List;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;

/**
 * Holds a Curator {@link InterProcessMutex} until told to release it, so that a test can check
 * deterministically what another client does while Curator holds the lock (crates/zk-lock/tests/zk_lock.rs).
 *
 * <p>Usage: {@code CuratorLockHolder CONNECT LOCK_PATH NAME LOG_FILE RELEASE_FILE}
 *
 * <p>Connects, acquires the lock (waiting at most 120 s), appends {@code NAME START <epoch
 * nanos>} to LOG_FILE, waits until RELEASE_FILE exists (at most 120 s), appends {@code NAME END
 * <epoch nanos>}, releases the lock and exits. The log format is the one of
 * CuratorMutexContender.java; every line is one O_APPEND write.
 *
 * <p>With {@code ZK_DIGEST=user:password} in the environment the client authenticates with
 * those {@code digest} credentials ({@code authorization("digest", ...)}) and creates every node
 * with {@code CREATOR_ALL_ACL} (an {@link ACLProvider}), so that only sessions with the same
 * credentials can read, join or delete the lock.
 *
 * <p>With {@code ZK_SASL_ACL=id1,id2,...} every node is created with an ACL granting everything to
 * those {@code sasl} ids (and nothing to anyone else); the client authenticates with SASL as its
 * JAAS {@code Client} section says ({@code -Djava.security.auth.login.config=FILE}).
 *
 * <p>Exit status: 0 on success, 1 on any error, 2 on bad arguments.
 */
public final class CuratorLockHolder {
    private static final long TIMEOUT_MS = 120_000;

    private CuratorLockHolder() {}

    private static long nowNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static void append(FileOutputStream out, String line) throws IOException {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: CuratorLockHolder CONNECT LOCK_PATH NAME LOG_FILE RELEASE_FILE");
            System.exit(2);
        }
        String connect = args[0];
        String lockPath = args[1];
        String name = args[2];
        String logFile = args[3];
        Path release = Paths.get(args[4]);

        int status = 0;
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(30_000)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10));
        String digest = System.getenv("ZK_DIGEST");
        if (digest != null && !digest.isEmpty()) {
            builder = builder.authorization("digest", digest.getBytes(StandardCharsets.UTF_8))
                    .aclProvider(new ACLProvider() {
                        @Override
                        public List<ACL> getDefaultAcl() {
                            return ZooDefs.Ids.CREATOR_ALL_ACL;
                        }

                        @Override
                        public List<ACL> getAclForPath(String path) {
                            return ZooDefs.Ids.CREATOR_ALL_ACL;
                        }
                    });
        }
        String saslAcl = System.getenv("ZK_SASL_ACL");
        if (saslAcl != null && !saslAcl.isEmpty()) {
            List<ACL> acl = new java.util.ArrayList<>();
            for (String id : saslAcl.split(",")) {
                acl.add(new ACL(ZooDefs.Perms.ALL, new org.apache.zookeeper.data.Id("sasl", id)));
            }
            builder = builder.aclProvider(new ACLProvider() {
                @Override
                public List<ACL> getDefaultAcl() {
                    return acl;
                }

                @Override
                public List<ACL> getAclForPath(String path) {
                    return acl;
                }
            });
        }
        CuratorFramework client = builder.build();
        try (FileOutputStream out = new FileOutputStream(logFile, true)) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": could not connect to " + connect);
            }
            InterProcessMutex lock = new InterProcessMutex(client, lockPath);
            if (!lock.acquire(TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(name + ": lock not acquired within " + TIMEOUT_MS + " ms");
            }
            try {
                append(out, name + " START " + nowNanos());
                long deadline = System.currentTimeMillis() + TIMEOUT_MS;
                while (!Files.exists(release)) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException(name + ": no release file within " + TIMEOUT_MS + " ms");
                    }
                    Thread.sleep(10);
                }
                append(out, name + " END " + nowNanos());
            } finally {
                lock.release();
            }
        } catch (Exception e) {
            System.err.println(name + ": " + e);
            e.printStackTrace();
            status = 1;
        } finally {
            client.close();
        }
        System.exit(status);
    }
}
