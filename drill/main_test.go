package drill_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/baton-go/baton/drill/internal/etcdtest"
	"github.com/baton-go/baton/drill/scenario"
)

// nopZap silences clientv3's logger.
var nopZap = zap.NewNop()

// etcdServer is the embedded etcd every etcd drill of this binary uses.
var etcdServer *etcdtest.Server

func TestMain(m *testing.M) {
	if scenario.IsHolder() {
		// Re-executed as the holder child of a scenario (package scenario).
		os.Exit(scenarioHolderMain())
	}
	if os.Getenv(holderEnv) != "" {
		// Re-executed as the holder of a process-fault drill (row 2).
		os.Exit(holderMain())
	}
	if os.Getenv(recipeHolderEnv) != "" {
		// Re-executed as the holder of a recipe drill (row 3).
		os.Exit(recipeHolderMain())
	}
	if os.Getenv(taskHolderEnv) != "" {
		// Re-executed as the paused task runner (row 2, tasks).
		os.Exit(taskHolderMain())
	}
	if os.Getenv(etcdChildEnv) != "" {
		// Re-executed as an etcd server that a drill can SIGSTOP (row 8).
		os.Exit(etcdChildMain())
	}
	// The embedded etcd fsyncs every write; on a loaded shared disk that
	// alone can stall lease renewals for seconds. Its data lives on tmpfs
	// when the machine has one (the drills test baton, not the disk).
	tmp, hadTmp := os.LookupEnv("TMPDIR")
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		os.Setenv("TMPDIR", "/dev/shm")
	}
	s, err := etcdtest.Start()
	if hadTmp {
		os.Setenv("TMPDIR", tmp)
	} else {
		os.Unsetenv("TMPDIR")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest:", err)
		os.Exit(1)
	}
	etcdServer = s
	code := m.Run()
	s.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
