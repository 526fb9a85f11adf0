// CuratorMutex takes Apache Curator's InterProcessMutex on a ZooKeeper path
// and runs a critical section under it, the same one baton's interop tests
// run under `baton run` and `etcdctl lock`, so the test can check that
// holders of different clients never overlap.
//
// Usage: java CuratorMutex CONNECT PATH DIR WHO HOLD ITERATIONS
//
//   CONNECT     ZooKeeper connect string (127.0.0.1:21810)
//   PATH        the lock path, e.g. /baton-interop/x (Curator's layout:
//               PATH/_c_<uuid>-lock-<seq> under container parents)
//   DIR         the shared test directory: DIR/log gets one appended line
//               per event, DIR/inside is the occupancy marker
//   WHO         this participant's name in the log
//   HOLD        seconds to hold ("0.05"), or "gate": hold until DIR/release-WHO
//               exists (the test decides when the holder leaves)
//   ITERATIONS  how many times to acquire, run and release
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
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorMutex {
    // The longest a gated holder or a waiter for DIR/start waits: a bound so
    // a broken test cannot leave a JVM behind.
    private static final long GATE_LIMIT_MS = 60_000;

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: CuratorMutex CONNECT PATH DIR WHO HOLD ITERATIONS");
            System.exit(64);
        }
        String connect = args[0];
        String path = args[1];
        Path dir = Paths.get(args[2]);
        String who = args[3];
        String hold = args[4]; // seconds, or "gate"
        int iterations = Integer.parseInt(args[5]);

        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        try {
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + connect + " within 20s");
            }
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            Files.createFile(dir.resolve("ready-" + who));
            if (!waitFor(dir.resolve("start"))) {
                throw new IllegalStateException(dir.resolve("start") + " did not appear within " + GATE_LIMIT_MS + "ms");
            }
            for (int i = 0; i < iterations; i++) {
                if (!mutex.acquire(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("acquire " + path + " timed out");
                }
                try {
                    critical(dir, who, hold);
                } finally {
                    mutex.release();
                }
            }
        } finally {
            client.close();
        }
    }

    // critical is the section every participant runs while it believes it
    // holds the lock. mkdir is atomic: if DIR/inside already exists another
    // holder is inside at the same moment, which is the overlap the test
    // looks for; the section then records it and leaves the marker alone.
    private static void critical(Path dir, String who, String hold) throws Exception {
        Path inside = dir.resolve("inside");
        try {
            Files.createDirectory(inside);
        } catch (FileAlreadyExistsException e) {
            log(dir, "overlap " + who);
            return;
        }
        log(dir, "enter " + who);
        if (hold.equals("gate")) {
            if (!waitFor(dir.resolve("release-" + who))) {
                log(dir, "gate-timeout " + who);
            }
        } else {
            Thread.sleep(Math.round(Double.parseDouble(hold) * 1000));
        }
        log(dir, "exit " + who);
        Files.delete(inside);
    }

    // log appends one line with a single write on an O_APPEND descriptor, so
    // lines of concurrent writers never interleave.
    private static void log(Path dir, String line) throws Exception {
        Files.write(dir.resolve("log"), (line + "\n").getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
    }

    // waitFor polls for p and reports whether it appeared within GATE_LIMIT_MS.
    private static boolean waitFor(Path p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GATE_LIMIT_MS);
        while (!Files.exists(p)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }
}
