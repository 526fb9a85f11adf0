// CuratorRecipes takes one of Apache Curator's recipes on a ZooKeeper path
// and runs a critical section under it, the same one baton's interop tests
// run under `baton run`, `baton elect` and etcdctl (testdata/critical.sh),
// so the test can check which holders of different clients overlapped.
//
// Usage: java CuratorRecipes CONNECT RECIPE PATH DIR WHO HOLD ITERATIONS
//
//   CONNECT     ZooKeeper connect string (127.0.0.1:21810)
//   RECIPE      mutex        InterProcessMutex(PATH)                   kind "mutex"
//               read         InterProcessReadWriteLock(PATH).readLock   kind "read"
//               write        InterProcessReadWriteLock(PATH).writeLock  kind "write"
//               semaphore:N  InterProcessSemaphoreV2(PATH, N), one lease kind "permit"
//               leader       LeaderLatch(PATH, WHO): start, await, close kind "leader"
//   PATH        the recipe's path, e.g. /baton-interop/x (Curator's layout:
//               PATH/_c_<uuid>-<marker><seq> under container parents;
//               the semaphore uses PATH/locks and PATH/leases)
//   DIR         the shared test directory: DIR/log gets one appended line
//               per event, DIR/holders/KIND.WHO is this holder's marker
//   WHO         this participant's name in the log
//   HOLD        seconds to hold ("0.05"), or "gate": hold until DIR/release-WHO
//               exists (the test decides when the holder leaves)
//   ITERATIONS  how many times to acquire, run and release
//
// TLS and digest authentication are optional, by JVM system properties,
// so that no secret is on the command line:
//
//   zookeeper.client.secure, zookeeper.clientCnxnSocket, zookeeper.ssl.*
//       ZooKeeper's own client settings (TLS with Netty; the key and trust
//       stores' passwords through zookeeper.ssl.*.passwordPath)
//   recipes.digest.user, recipes.digest.passwordPath
//       a digest user and the file holding its password: the client adds
//       the credential to its session and creates every node (entries and
//       container parents) with an ACL granting all rights to that digest
//       identity alone, the ACL baton's zklock sets with the same user, so
//       that each client may read and delete the other's nodes
//
// Before the first acquire it connects, creates DIR/ready-WHO and, when
// DIR/start exists or appears, begins; so the test can start several
// participants together after the JVMs have paid their start-up cost.
// Exit status 0 means every iteration acquired and released; anything else
// is reported on stderr.

import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

public final class CuratorRecipes {
    // The longest a gated holder, a waiter for DIR/start or an acquire
    // waits: a bound so a broken test cannot leave a JVM behind.
    private static final long LIMIT_MS = 60_000;

    // Grant is one acquisition, released by close.
    private interface Grant extends AutoCloseable {
        @Override
        void close() throws Exception;
    }

    // Recipe acquires once, blocking up to LIMIT_MS.
    private interface Recipe {
        Grant acquire() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: CuratorRecipes CONNECT RECIPE PATH DIR WHO HOLD ITERATIONS");
            System.exit(64);
        }
        String connect = args[0];
        String recipe = args[1];
        String path = args[2];
        Path dir = Paths.get(args[3]);
        String who = args[4];
        String hold = args[5]; // seconds, or "gate"
        int iterations = Integer.parseInt(args[6]);

        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5));
        digest(builder);
        CuratorFramework client = builder.build();
        client.start();
        try {
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + connect + " within 20s");
            }
            String kind;
            Recipe r;
            if (recipe.equals("mutex")) {
                kind = "mutex";
                r = lock(new InterProcessMutex(client, path), path);
            } else if (recipe.equals("read")) {
                kind = "read";
                r = lock(new InterProcessReadWriteLock(client, path).readLock(), path);
            } else if (recipe.equals("write")) {
                kind = "write";
                r = lock(new InterProcessReadWriteLock(client, path).writeLock(), path);
            } else if (recipe.startsWith("semaphore:")) {
                kind = "permit";
                int n = Integer.parseInt(recipe.substring("semaphore:".length()));
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, n);
                r = () -> {
                    Lease lease = sem.acquire(LIMIT_MS, TimeUnit.MILLISECONDS);
                    if (lease == null) {
                        throw new IllegalStateException("semaphore " + path + ": no lease within " + LIMIT_MS + "ms");
                    }
                    return () -> sem.returnLease(lease);
                };
            } else if (recipe.equals("leader")) {
                kind = "leader";
                // A latch cannot be restarted: each iteration is a new
                // candidacy with a new latch node.
                r = () -> {
                    LeaderLatch latch = new LeaderLatch(client, path, who);
                    latch.start();
                    if (!latch.await(LIMIT_MS, TimeUnit.MILLISECONDS) || !latch.hasLeadership()) {
                        latch.close();
                        throw new IllegalStateException("latch " + path + ": not leader within " + LIMIT_MS + "ms");
                    }
                    return latch::close;
                };
            } else {
                throw new IllegalArgumentException("unknown recipe " + recipe);
            }
            Files.createFile(dir.resolve("ready-" + who));
            if (!waitFor(dir.resolve("start"))) {
                throw new IllegalStateException(dir.resolve("start") + " did not appear within " + LIMIT_MS + "ms");
            }
            for (int i = 0; i < iterations; i++) {
                try (Grant g = r.acquire()) {
                    critical(dir, who, kind, hold);
                }
            }
        } finally {
            client.close();
        }
        // The session is closed. Netty's event loop (the TLS client
        // socket's) keeps the JVM up for its two-second quiet period after
        // that; nothing is left to wait for.
        System.exit(0);
    }

    // digest configures the digest user of recipes.digest.user, if set:
    // its credential on the session and its ACL on every node created.
    private static void digest(CuratorFrameworkFactory.Builder builder) throws Exception {
        String user = System.getProperty("recipes.digest.user");
        if (user == null || user.isEmpty()) {
            return;
        }
        String passwordPath = System.getProperty("recipes.digest.passwordPath");
        if (passwordPath == null || passwordPath.isEmpty()) {
            throw new IllegalArgumentException("recipes.digest.user without recipes.digest.passwordPath");
        }
        String password = new String(Files.readAllBytes(Paths.get(passwordPath)), StandardCharsets.UTF_8).trim();
        String credential = user + ":" + password;
        List<ACL> acl = Collections.singletonList(new ACL(ZooDefs.Perms.ALL,
                new Id("digest", DigestAuthenticationProvider.generateDigest(credential))));
        builder.authorization("digest", credential.getBytes(StandardCharsets.UTF_8))
                .aclProvider(new ACLProvider() {
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

    private static Recipe lock(InterProcessLock l, String path) {
        return () -> {
            if (!l.acquire(LIMIT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("acquire " + path + " timed out");
            }
            return l::release;
        };
    }

    // critical is the section every participant runs while it believes it
    // holds its grant, step for step as testdata/critical.sh: create the
    // marker DIR/holders/KIND.WHO, list every marker present (SEEN), log
    // "enter WHO TOKEN ENGINE LOCK KIND EPOCH SEEN" ("-" for baton's
    // environment, which a Curator holder has not), hold, log "exit WHO",
    // remove the marker. Marker then listing, on both sides of any pair of
    // holders, means at least one of two overlapping holders sees the other.
    private static void critical(Path dir, String who, String kind, String hold) throws Exception {
        Path holders = dir.resolve("holders");
        Files.createDirectories(holders);
        Path mine = holders.resolve(kind + "." + who);
        try {
            Files.createDirectory(mine);
        } catch (FileAlreadyExistsException e) {
            log(dir, "overlap " + who);
            return;
        }
        String seen;
        try (Stream<Path> s = Files.list(holders)) {
            seen = s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.joining(","));
        }
        log(dir, "enter " + who + " - - - " + kind + " - " + seen);
        if (hold.equals("gate")) {
            if (!waitFor(dir.resolve("release-" + who))) {
                log(dir, "gate-timeout " + who);
            }
        } else {
            Thread.sleep(Math.round(Double.parseDouble(hold) * 1000));
        }
        log(dir, "exit " + who);
        Files.delete(mine);
    }

    // log appends one line with a single write on an O_APPEND descriptor, so
    // lines of concurrent writers never interleave.
    private static void log(Path dir, String line) throws Exception {
        Files.write(dir.resolve("log"), (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
    }

    // waitFor polls for p and reports whether it appeared within LIMIT_MS.
    private static boolean waitFor(Path p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LIMIT_MS);
        while (!Files.exists(p)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }
}
