// Curator 5.4's ServiceDiscovery (curator-x-discovery, JsonInstanceSerializer in its default
// compatible mode, a POJO payload: InteropDetails), driven line by line from stdin, for the
// discovery interop proof (scripts/discovery-interop.sh; its Rust twin is
// examples/discovery_peer.rs, which answers the same commands with the same lines).
//
// usage: java DiscoveryPeer CONNECT_STRING BASE_PATH
//   (SESSION_MS in the environment: the session timeout, default 10000)
//
// Prints "READY" once connected and the discovery started. Then every stdin line is
// "SEQ COMMAND ARGS..."; the answer is one final line "SEQ OK ..." or "SEQ ERR message".
//   SEQ register NAME ID ADDRESS PORT SSLPORT DESCRIPTION WEIGHT
//                          registers a DYNAMIC instance (uriSpec {scheme}://{address}:{port},
//                          payload InteropDetails(DESCRIPTION, WEIGHT)): "SEQ OK REGISTERED"
//   SEQ update NAME ID PORT  updateService with that port (the rest as registered): "SEQ OK UPDATED"
//   SEQ find NAME ID [PORT] waits (10 s) until queryForInstance(NAME, ID) is there (with PORT,
//                          when given): "SEQ OK FOUND FIELDS SAME|DIFF", FIELDS the instance
//                          as name|id|address|port|sslPort|registrationTimeUTC|serviceType|
//                          uri|payloadClass|description|weight|enabled, SAME when this side's
//                          serializer writes the node's bytes again exactly
//   SEQ gone NAME ID        waits (10 s) until queryForInstance(NAME, ID) is null: "SEQ OK GONE"
//   SEQ names               "SEQ OK NAMES a,b" (queryForNames, sorted)
//   SEQ ids NAME            "SEQ OK IDS a,b" (queryForInstances, ids sorted)
//   SEQ unregister ID       "SEQ OK UNREGISTERED"
//   SEQ delete NAME ID      an operator's delete of the instance's node (the client's delete,
//                          not the discovery's): "SEQ OK DELETED"
//   SEQ czxid NAME ID       "SEQ OK CZXID n" (the node's czxid; "none" when it does not exist)
// Exits 0 at the end of stdin (closing the discovery).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.ZKPaths;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

public class DiscoveryPeer {
    static final long WAIT_MS = 10_000;

    static CuratorFramework client;
    static String base;
    static ServiceDiscovery<InteropDetails> discovery;
    static JsonInstanceSerializer<InteropDetails> serializer = new JsonInstanceSerializer<>(InteropDetails.class);
    static Map<String, ServiceInstance<InteropDetails>> mine = new HashMap<>();

    static void out(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static String fields(ServiceInstance<InteropDetails> i) {
        InteropDetails p = i.getPayload();
        return String.join("|", Arrays.asList(
            i.getName(), i.getId(), String.valueOf(i.getAddress()), String.valueOf(i.getPort()),
            String.valueOf(i.getSslPort()), String.valueOf(i.getRegistrationTimeUTC()),
            String.valueOf(i.getServiceType()), String.valueOf(i.buildUriSpec()),
            p == null ? "null" : p.getClass().getName(),
            p == null ? "null" : p.getDescription(), p == null ? "null" : String.valueOf(p.getWeight()),
            String.valueOf(i.isEnabled())));
    }

    static String run(String seq, String[] w) throws Exception {
        switch (w[1]) {
            case "register": {
                ServiceInstance<InteropDetails> i = ServiceInstance.<InteropDetails>builder()
                    .name(w[2]).id(w[3]).address(w[4]).port(Integer.parseInt(w[5]))
                    .sslPort(Integer.parseInt(w[6]))
                    .payload(new InteropDetails(w[7], Integer.parseInt(w[8])))
                    .serviceType(ServiceType.DYNAMIC)
                    .uriSpec(new UriSpec("{scheme}://{address}:{port}"))
                    .build();
                discovery.registerService(i);
                mine.put(i.getId(), i);
                return "REGISTERED";
            }
            case "update": {
                ServiceInstance<InteropDetails> o = mine.get(w[3]);
                if (o == null) throw new Exception("not registered here: " + w[3]);
                ServiceInstance<InteropDetails> i = new ServiceInstance<>(o.getName(), o.getId(), o.getAddress(),
                    Integer.parseInt(w[4]), o.getSslPort(), o.getPayload(), o.getRegistrationTimeUTC(),
                    o.getServiceType(), o.getUriSpec(), o.isEnabled());
                discovery.updateService(i);
                mine.put(i.getId(), i);
                return "UPDATED";
            }
            case "find": {
                Integer port = w.length > 4 ? Integer.valueOf(w[4]) : null;
                long end = System.currentTimeMillis() + WAIT_MS;
                while (true) {
                    ServiceInstance<InteropDetails> i = discovery.queryForInstance(w[2], w[3]);
                    if (i != null && (port == null || port.equals(i.getPort()))) {
                        byte[] raw = client.getData().forPath(ZKPaths.makePath(ZKPaths.makePath(base, w[2]), w[3]));
                        byte[] again = serializer.serialize(i);
                        return "FOUND " + fields(i) + " " + (Arrays.equals(raw, again) ? "SAME" : "DIFF raw="
                            + new String(raw, "UTF-8") + " again=" + new String(again, "UTF-8"));
                    }
                    if (System.currentTimeMillis() > end) throw new Exception("not found within 10 s: " + w[2] + "/" + w[3]);
                    Thread.sleep(10);
                }
            }
            case "gone": {
                long end = System.currentTimeMillis() + WAIT_MS;
                while (discovery.queryForInstance(w[2], w[3]) != null) {
                    if (System.currentTimeMillis() > end) throw new Exception("still there after 10 s");
                    Thread.sleep(10);
                }
                return "GONE";
            }
            case "names": {
                List<String> n = new ArrayList<>(discovery.queryForNames());
                Collections.sort(n);
                return "NAMES " + (n.isEmpty() ? "-" : String.join(",", n));
            }
            case "ids": {
                List<String> ids = new ArrayList<>();
                for (ServiceInstance<InteropDetails> i : discovery.queryForInstances(w[2])) ids.add(i.getId());
                Collections.sort(ids);
                return "IDS " + (ids.isEmpty() ? "-" : String.join(",", ids));
            }
            case "unregister": {
                ServiceInstance<InteropDetails> o = mine.remove(w[2]);
                if (o == null) throw new Exception("not registered here: " + w[2]);
                discovery.unregisterService(o);
                return "UNREGISTERED";
            }
            case "delete": {
                client.delete().forPath(ZKPaths.makePath(ZKPaths.makePath(base, w[2]), w[3]));
                return "DELETED";
            }
            case "czxid": {
                org.apache.zookeeper.data.Stat st = client.checkExists()
                    .forPath(ZKPaths.makePath(ZKPaths.makePath(base, w[2]), w[3]));
                return "CZXID " + (st == null ? "none" : String.valueOf(st.getCzxid()));
            }
            default:
                throw new Exception("unknown command " + w[1]);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: DiscoveryPeer CONNECT_STRING BASE_PATH");
            System.exit(2);
        }
        int sessionMs = Integer.parseInt(System.getenv().getOrDefault("SESSION_MS", "10000"));
        base = args[1];
        client = CuratorFrameworkFactory.newClient(args[0], sessionMs, 15_000, new RetryNTimes(10, 100));
        client.start();
        if (!client.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
            throw new Exception("not connected within 30 s");
        }
        discovery = ServiceDiscoveryBuilder.builder(InteropDetails.class).client(client).basePath(base)
            .serializer(serializer).build();
        discovery.start();
        out("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w.length < 2) continue;
            try {
                out(w[0] + " OK " + run(w[0], w));
            } catch (Exception e) {
                out(w[0] + " ERR " + String.valueOf(e).replace('\n', ' '));
            }
        }
        discovery.close();
        client.close();
    }
}

// The POJO payload (Jackson writes it as {"@class":"InteropDetails","description":...,"weight":...}).
class InteropDetails {
    private String description;
    private int weight;

    public InteropDetails() {}

    InteropDetails(String description, int weight) {
        this.description = description;
        this.weight = weight;
    }

    public String getDescription() { return description; }
    public void setDescription(String d) { description = d; }
    public int getWeight() { return weight; }
    public void setWeight(int w) { weight = w; }
}
