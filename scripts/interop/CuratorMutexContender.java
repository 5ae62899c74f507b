import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * One contender for a Curator lock, used to prove that foreign clients interoperate on a
 * ZooKeeper server (see scripts/foreign-clients.sh).
 *
 * <p>Usage: {@code CuratorMutexContender CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE
 * [mutex|semaphore]}
 *
 * <p>Each iteration acquires the lock ({@link InterProcessMutex} or {@link
 * InterProcessSemaphoreMutex}), appends {@code NAME START <epoch nanos>} to LOG_FILE, holds the
 * lock for HOLD_MS, appends {@code NAME END <epoch nanos>} and releases. Every line is a single
 * O_APPEND write, so several processes can share LOG_FILE. The clock is the wall clock, shared
 * with the other contenders (Python's {@code time.time_ns()}).
 *
 * <p>Start barrier (optional): if the environment variable CONTENDER_READY_DIR is set, the
 * contender creates the file {@code NAME} in it once connected, then waits for the file named by
 * CONTENDER_GO_FILE to exist before contending, so that all contenders really compete.
 *
 * <p>Exit status: 0 on success, 1 on any error, 2 on bad arguments.
 */
public final class CuratorMutexContender {
    private static final long BARRIER_TIMEOUT_MS = 120_000;
    private static final long ACQUIRE_TIMEOUT_S = 120;

    private CuratorMutexContender() {}

    private static long nowNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static void append(FileOutputStream out, String line) throws IOException {
        // FileOutputStream is unbuffered: one write(2) per call, on an O_APPEND descriptor.
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
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
        if (args.length < 6 || args.length > 7) {
            System.err.println(
                    "usage: CuratorMutexContender CONNECT LOCK_PATH NAME ITERATIONS HOLD_MS LOG_FILE [mutex|semaphore]");
            System.exit(2);
        }
        String connect = args[0];
        String lockPath = args[1];
        String name = args[2];
        int iterations = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        String logFile = args[5];
        String kind = args.length == 7 ? args[6] : "mutex";
        if (!kind.equals("mutex") && !kind.equals("semaphore")) {
            System.err.println("lock kind must be mutex or semaphore, got " + kind);
            System.exit(2);
        }

        int status = 0;
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(30_000)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        try (FileOutputStream out = new FileOutputStream(logFile, true)) {
            client.start();
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": could not connect to " + connect);
            }
            InterProcessLock lock = kind.equals("mutex")
                    ? new InterProcessMutex(client, lockPath)
                    : new InterProcessSemaphoreMutex(client, lockPath);
            barrier(name);
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(ACQUIRE_TIMEOUT_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(name + ": lock not acquired within " + ACQUIRE_TIMEOUT_S + " s");
                }
                try {
                    append(out, name + " START " + nowNanos());
                    Thread.sleep(holdMs);
                    append(out, name + " END " + nowNanos());
                } finally {
                    lock.release();
                }
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
