// Curator 5.4's DistributedAtomicLong, driven line by line from stdin, for the
// at-most-once comparison in crates/zk-recipes/tests/it/counters.rs
// (`curator_counts_an_increment_twice_when_its_reply_is_lost`, ignored by
// default: it needs java, javac and Debian's Curator jars).
//
// usage: java CuratorAtomicIncrement CONNECT_STRING PATH
// Prints READY once connected; then for each line "increment" (or "get") on
// stdin prints "RESULT <succeeded> <preValue> <postValue> <optimisticTries>".
import java.io.BufferedReader;
import java.io.InputStreamReader;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.retry.RetryNTimes;

public class CuratorAtomicIncrement {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryNTimes(10, 50))) {
            client.start();
            client.blockUntilConnected();
            DistributedAtomicLong counter = new DistributedAtomicLong(client, path, new RetryNTimes(10, 10));
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            System.out.println("READY");
            System.out.flush();
            String line;
            while ((line = in.readLine()) != null) {
                AtomicValue<Long> r;
                if (line.equals("increment")) {
                    r = counter.increment();
                } else if (line.equals("get")) {
                    r = counter.get();
                } else {
                    break;
                }
                System.out.println("RESULT " + r.succeeded() + " " + r.preValue() + " " + r.postValue() + " "
                        + r.getStats().getOptimisticTries());
                System.out.flush();
            }
        }
    }
}
