// Curator 5.4's DistributedAtomicLong, GroupMember and DistributedDoubleBarrier, driven line
// by line from stdin, for the recipes interop proof (scripts/recipes-interop.sh; its Rust twin
// is examples/recipes_peer.rs, which answers the same commands with the same lines).
//
// usage: java RecipesPeer CONNECT_STRING ROOT ID
//   (SESSION_MS in the environment: the session timeout, default 10000)
//
// Prints "READY" once connected. Then every stdin line is "SEQ COMMAND ARGS..."; the answer is
// one final line "SEQ OK ..." or "SEQ ERR message", with progress lines "SEQ TAG ..." before
// it. Times are microseconds since the epoch (this machine's clock, as the Rust peer's).
//   SEQ atomic N [PAUSE_MS]  N increments of ROOT/counter (PAUSE_MS, default 0, between two): "SEQ INC true|false PRE POST TRIES"
//                          each (Curator's succeeded()), then
//                          "SEQ OK ATOMIC applied notapplied unknown errors" (unknown: always 0
//                          here, Curator has no such outcome)
//   SEQ read               "SEQ OK READ VALUE HEX": the counter's get() and its node's bytes
//   SEQ join HEX           a GroupMember ID of ROOT/group with payload HEX, started: "SEQ OK JOINED"
//   SEQ await-member X HEX waits (10 s) until the member view holds X with payload HEX:
//                          "SEQ OK SEES VIEW" (VIEW: id=hex,... sorted by id)
//   SEQ await-gone X       waits (10 s) until the member view lacks X: "SEQ OK GONE VIEW"
//   SEQ leave              closes the GroupMember: "SEQ OK LEFT"
//   SEQ await-in PATH K    waits (10 s) until PATH has K member nodes (children but "ready"):
//                          "SEQ OK IN K"
//   SEQ children PATH      "SEQ OK CHILDREN a,b" (sorted; "-": none; "no-node": no PATH)
//   SEQ enter PATH         a DistributedDoubleBarrier(PATH, 2): "SEQ ENTERING T", enter (20 s),
//                          "SEQ OK ENTERED T"
//   SEQ barrier-leave      "SEQ LEAVING T", leave (20 s) of the last entered barrier,
//                          "SEQ OK LEFT-BARRIER T"
// Exits 0 at the end of stdin.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;

public class RecipesPeer {
    static final long WAIT_MS = 10_000;
    static final long BARRIER_S = 20;

    static CuratorFramework client;
    static String root;
    static String id;
    static GroupMember member;
    static DistributedDoubleBarrier barrier;

    static void out(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static long nowUs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
    }

    static String hex(byte[] b) {
        if (b == null || b.length == 0) return "-";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    static String view() {
        Map<String, byte[]> m = new TreeMap<>(member.getCurrentMembers());
        StringBuilder s = new StringBuilder();
        for (Map.Entry<String, byte[]> e : m.entrySet()) {
            if (s.length() > 0) s.append(',');
            s.append(e.getKey()).append('=').append(hex(e.getValue()));
        }
        return s.length() == 0 ? "-" : s.toString();
    }

    static byte[] unhex(String h) {
        if (h.equals("-")) return new byte[0];
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static String run(String seq, String[] a) throws Exception {
        switch (a[1]) {
            case "atomic": {
                int n = Integer.parseInt(a[2]);
                long pauseMs = a.length > 3 ? Long.parseLong(a[3]) : 0;
                DistributedAtomicLong counter =
                        new DistributedAtomicLong(client, root + "/counter", new RetryNTimes(10, 10));
                int applied = 0, notApplied = 0, errors = 0;
                for (int i = 0; i < n; i++) {
                    if (i > 0 && pauseMs > 0) Thread.sleep(pauseMs);
                    try {
                        AtomicValue<Long> r = counter.increment();
                        if (r.succeeded()) applied++; else notApplied++;
                        out(seq + " INC " + r.succeeded() + " " + r.preValue() + " " + r.postValue() + " "
                                + r.getStats().getOptimisticTries());
                    } catch (Exception e) {
                        errors++;
                        out(seq + " INC error " + e.toString().replace('\n', ' '));
                    }
                }
                return "ATOMIC " + applied + " " + notApplied + " 0 " + errors;
            }
            case "read": {
                DistributedAtomicLong counter =
                        new DistributedAtomicLong(client, root + "/counter", new RetryNTimes(10, 10));
                AtomicValue<Long> v = counter.get();
                if (!v.succeeded()) throw new IllegalStateException("get() did not succeed");
                byte[] bytes = client.getData().forPath(root + "/counter");
                return "READ " + v.postValue() + " " + hex(bytes);
            }
            case "join": {
                member = new GroupMember(client, root + "/group", id, unhex(a[2]));
                member.start();
                return "JOINED";
            }
            case "await-member": {
                String want = a[2] + "=" + a[3];
                long end = System.currentTimeMillis() + WAIT_MS;
                while (true) {
                    String v = view();
                    if (("," + v + ",").contains("," + want + ",")) return "SEES " + v;
                    if (System.currentTimeMillis() > end)
                        throw new IllegalStateException("no " + want + " in the member view within "
                                + WAIT_MS + " ms; view: " + v);
                    Thread.sleep(10);
                }
            }
            case "await-gone": {
                long end = System.currentTimeMillis() + WAIT_MS;
                while (true) {
                    Map<String, byte[]> m = member.getCurrentMembers();
                    if (!m.containsKey(a[2])) return "GONE " + view();
                    if (System.currentTimeMillis() > end)
                        throw new IllegalStateException(a[2] + " still in the member view after "
                                + WAIT_MS + " ms; view: " + view());
                    Thread.sleep(10);
                }
            }
            case "leave": {
                member.close();
                member = null;
                return "LEFT";
            }
            case "await-in": {
                int k = Integer.parseInt(a[3]);
                long end = System.currentTimeMillis() + WAIT_MS;
                while (true) {
                    int in = 0;
                    try {
                        List<String> kids = client.getChildren().forPath(a[2]);
                        for (String c : kids) if (!c.equals("ready")) in++;
                    } catch (KeeperException.NoNodeException e) {
                        // not created yet
                    }
                    if (in >= k) return "IN " + in;
                    if (System.currentTimeMillis() > end)
                        throw new IllegalStateException(a[2] + " has " + in + " member nodes after " + WAIT_MS + " ms");
                    Thread.sleep(10);
                }
            }
            case "children": {
                try {
                    List<String> kids = new java.util.ArrayList<>(client.getChildren().forPath(a[2]));
                    java.util.Collections.sort(kids);
                    return "CHILDREN " + (kids.isEmpty() ? "-" : String.join(",", kids));
                } catch (KeeperException.NoNodeException e) {
                    return "CHILDREN no-node";
                }
            }
            case "enter": {
                barrier = new DistributedDoubleBarrier(client, a[2], 2);
                out(seq + " ENTERING " + nowUs());
                if (!barrier.enter(BARRIER_S, TimeUnit.SECONDS))
                    throw new IllegalStateException("enter timed out after " + BARRIER_S + " s");
                return "ENTERED " + nowUs();
            }
            case "barrier-leave": {
                out(seq + " LEAVING " + nowUs());
                if (!barrier.leave(BARRIER_S, TimeUnit.SECONDS))
                    throw new IllegalStateException("leave timed out after " + BARRIER_S + " s");
                return "LEFT-BARRIER " + nowUs();
            }
            default:
                throw new IllegalArgumentException("unknown command " + a[1]);
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        root = args[1];
        id = args[2];
        int sessionMs = Integer.parseInt(System.getenv().getOrDefault("SESSION_MS", "10000"));
        client = CuratorFrameworkFactory.newClient(connect, sessionMs, 15000, new RetryNTimes(10, 100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("not connected within 30 s");
            System.exit(1);
        }
        // Load the recipes' classes before the concurrent phase (a cold first increment would
        // let the Rust peer run ahead alone).
        new DistributedAtomicLong(client, root + "/counter", new RetryNTimes(1, 10)).get();
        out("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] a = line.trim().split(" +");
            if (a.length < 2) continue;
            try {
                out(a[0] + " OK " + run(a[0], a));
            } catch (Exception e) {
                out(a[0] + " ERR " + e.toString().replace('\n', ' '));
            }
        }
        if (member != null) member.close();
        client.close();
    }
}
