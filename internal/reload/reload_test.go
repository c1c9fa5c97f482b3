package reload

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/skylb/skylb/internal/etcdtest"
)

func TestWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type read struct {
		at    float64
		up    bool
		stamp string
		want  string
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"etcd answering: never", []read{{0, true, "a", ""}, {1, true, "a", ""}, {2, true, "a", ""}}},
		{"outage shorter than the minimum: none", []read{
			{0, true, "a", ""}, {1, false, "a", ""}, {2, false, "a", ""}, {3, true, "a", ""}}},
		{"outage of the minimum: once, when etcd answers", []read{
			{0, true, "a", ""}, {1, false, "a", ""}, {2, false, "a", ""}, {4, true, "a", "etcd answers again after 3s down"}, {5, true, "a", ""}}},
		{"etcd down from the start: when it answers", []read{
			{0, false, "a", ""}, {10, false, "a", ""}, {11, true, "a", "etcd answers again after 11s down"}}},
		{"files changed: at once", []read{
			{0, true, "a", ""}, {1, true, "b", "the etcd client's certificate files changed"}, {2, true, "b", ""}}},
		{"files changed while etcd refuses them: once it answers, one reload", []read{
			{0, true, "a", ""}, {1, false, "b", ""}, {2, false, "b", ""}, {60, true, "b", "the etcd client's certificate files changed; etcd answers again after 59s down"}, {61, true, "b", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watch{minOutage: 3 * time.Second}
			for _, r := range tc.reads {
				if got := w.observe(at(r.at), r.up, r.stamp); got != r.want {
					t.Errorf("at %vs (up %v, files %s): %q, want %q", r.at, r.up, r.stamp, got, r.want)
				}
			}
		})
	}
}

func TestWatchOwedUntilSignalled(t *testing.T) {
	w := watch{minOutage: time.Second}
	t0 := time.Unix(1000, 0)
	w.observe(t0, false, "a")
	reason := w.observe(t0.Add(5*time.Second), true, "a")
	if reason == "" {
		t.Fatal("no reload after a 5 s outage")
	}
	// The signal failed (CoreDNS restarting): the reload stays owed.
	w.owe(reason)
	if got := w.observe(t0.Add(6*time.Second), true, "a"); got != reason {
		t.Errorf("the next read gives %q, want the owed %q", got, reason)
	}
}

// TestRunSignalsAfterOutageAndRotation runs the reloader against a real etcd,
// with this test's own pid in the pid file: it must get SIGUSR1 once etcd
// answers again after an outage, and once the client certificate changes.
func TestRunSignalsAfterOutageAndRotation(t *testing.T) {
	srv := etcdtest.Start(t)
	pidFile := filepath.Join(t.TempDir(), "coredns.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1)
	defer signal.Stop(sig)

	log := logrus.New()
	log.SetOutput(testWriter{t})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Etcd: srv.Client, Key: "/skydns/", PIDFile: pidFile,
			Interval: 100 * time.Millisecond, MinOutage: 500 * time.Millisecond, Log: log})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	expect := func(what string, within time.Duration) {
		t.Helper()
		select {
		case <-sig:
		case <-time.After(within):
			t.Fatalf("no SIGUSR1 within %s of %s", within, what)
		}
	}
	none := func(what string, during time.Duration) {
		t.Helper()
		select {
		case <-sig:
			t.Fatalf("SIGUSR1 %s", what)
		case <-time.After(during):
		}
	}
	none("while etcd answers", time.Second)

	srv.Stop()
	time.Sleep(1500 * time.Millisecond)
	srv.Restart()
	expect("etcd's return", 10*time.Second)
	none("after the reload for the outage", time.Second)

	// A renewed certificate: same name, new key.
	srv.Issue(t, "skylb", "skylb")
	expect("the certificate's renewal", 10*time.Second)
	none("after the reload for the renewal", time.Second)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func TestWatchedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func() string {
		t.Helper()
		s, err := contentStamp([]string{filepath.Join(dir, "*.view")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	none := stamp()
	write("Corefile", ". {}")
	if stamp() != none {
		t.Error("a file the pattern does not match changed the stamp")
	}
	write("skylb.view", "block a")
	a := stamp()
	if a == none {
		t.Error("a new file left the stamp as it was")
	}
	// A ConfigMap's update swaps its files for new ones: the same contents
	// are no change.
	if err := os.Remove(filepath.Join(dir, "skylb.view")); err != nil {
		t.Fatal(err)
	}
	write("skylb.view", "block a")
	if stamp() != a {
		t.Error("the same contents written again changed the stamp")
	}
	write("skylb.view", "block b")
	b := stamp()
	if b == a {
		t.Error("new contents left the stamp as it was")
	}

	w := watch{minOutage: 3 * time.Second}
	t0 := time.Unix(1000, 0)
	w.watched(a)
	if got := w.observe(t0, true, "certs"); got != "" {
		t.Errorf("first look: %q, want no reload", got)
	}
	w.watched(b)
	// etcd down: the reload waits, since it would drop the cache CoreDNS
	// answers from meanwhile.
	if got := w.observe(t0.Add(time.Second), false, "certs"); got != "" {
		t.Errorf("changed while etcd is down: %q, want none yet", got)
	}
	if got := w.observe(t0.Add(2*time.Second), true, "certs"); got != "the files CoreDNS imports changed" {
		t.Errorf("once etcd answers: %q, want the files' reason", got)
	}
	w.watched(b)
	if got := w.observe(t0.Add(3*time.Second), true, "certs"); got != "" {
		t.Errorf("unchanged: %q, want none", got)
	}
	// The kubelet's one sync of the pod updates both: one reload, for both.
	w.watched(a)
	want := "the files CoreDNS imports changed; the etcd client's certificate files changed"
	if got := w.observe(t0.Add(4*time.Second), true, "renewed"); got != want {
		t.Errorf("both changed: %q, want %q", got, want)
	}
}
