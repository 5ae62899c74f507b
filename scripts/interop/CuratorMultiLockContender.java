import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * One contender holding a Curator {@link InterProcessMultiLock} (one InterProcessMutex per
 * path, taken in list order), used to prove that Curator's multi-lock and ours exclude each
 * other (see scripts/foreign-clients.sh).
 *
 * <p>Usage: {@code CuratorMultiLockContender CONNECT PATH[,PATH...] NAME ITERATIONS HOLD_MS
 * LOG_FILE[,LOG_FILE...]}
 *
 * <p>Each iteration acquires every lock, appends {@code NAME START <epoch nanos>} to each
 * LOG_FILE (one per lock path, so that each file can be checked for mutual exclusion with the
 * contenders of that one lock), holds for HOLD_MS, appends {@code NAME END <epoch nanos>} and
 * releases. Curator takes the locks in the order given and does not sort them: give them in
 * sorted order when other multi-locks (ours sorts) compete, or they can deadlock.
 *
 * <p>Start barrier (optional): as in CuratorMutexContender (CONTENDER_READY_DIR,
 * CONTENDER_GO_FILE).
 *
 * <p>Exit status: 0 on success, 1 on any error, 2 on bad arguments.
 */
public final class CuratorMultiLockContender {
    private static final long BARRIER_TIMEOUT_MS = 120_000;
    private static final long ACQUIRE_TIMEOUT_S = 120;

    private CuratorMultiLockContender() {}

    private static long nowNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static void append(List<FileOutputStream> outs, String line) throws IOException {
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
        for (FileOutputStream out : outs) {
            // FileOutputStream is unbuffered: one write(2) per call, on an O_APPEND descriptor.
            out.write(bytes);
        }
    }

    private static void barrier(String name) throws Exception {
        String readyDir = System.getenv("CONTENDER_READY_DIR");
        String goFile = System.getenv("CONTENDER_GO_FILE");
        if (readyDir == null || readyDir.isEmpty() || goFile == null || goFile.isEmpty()) {
            return;
        }
        Files.write(Paths.get(readyDir, name), new byte[0]);
        Path go = Paths.get(goFile);
        long deadline = System.currentTimeMillis() + BARRIER_TIMEOUT_MS;
        while (!Files.exists(go)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(name + ": no go signal within " + BARRIER_TIMEOUT_MS + " ms");
            }
            Thread.sleep(10);
        }
    }

    public static void main(String[] args) {
        if (args.length != 6) {
            System.err.println(
                    "usage: CuratorMultiLockContender CONNECT PATH[,PATH...] NAME ITERATIONS HOLD_MS LOG_FILE[,LOG_FILE...]");
            System.exit(2);
        }
        String connect = args[0];
        List<String> paths = Arrays.asList(args[1].split(","));
        String name = args[2];
        int iterations = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        String[] logFiles = args[5].split(",");

        int status = 0;
        List<FileOutputStream> outs = new ArrayList<>();
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(30_000)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        try {
            for (String f : logFiles) {
                outs.add(new FileOutputStream(f, true));
            }
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": could not connect to " + connect);
            }
            InterProcessMultiLock lock = new InterProcessMultiLock(client, paths);
            barrier(name);
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(name + ": locks not acquired within " + ACQUIRE_TIMEOUT_S + " s");
                }
                try {
                    append(outs, name + " START " + nowNanos());
                    Thread.sleep(holdMs);
                    append(outs, name + " END " + nowNanos());
                } finally {
                    lock.release();
                }
            }
        } catch (Exception e) {
            System.err.println(name + ": " + e);
            e.printStackTrace();
            status = 1;
        } finally {
            for (FileOutputStream out : outs) {
                try {
                    out.close();
                } catch (IOException e) {
                    status = 1;
                }
            }
            client.close();
        }
        System.exit(status);
    }
}
