package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, 5*time.Second, "third call", func() (bool, string) {
		calls++
		return calls == 3, "not yet"
	})
	if calls != 3 {
		t.Errorf("Eventually called cond %d times, want 3", calls)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	log := "old 1\nold 2\n==== start 2\nnew 1\nnew 2\nnew 3\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Tail(path, 2)
	want := "\n----- last lines of " + path + " -----\nnew 2\nnew 3"
	if got != want {
		t.Errorf("Tail(2) = %q, want %q", got, want)
	}
	if got := Tail(path, 10); strings.Contains(got, "old") || !strings.Contains(got, "==== start 2\nnew 1") {
		t.Errorf("Tail(10) = %q, want the latest run only", got)
	}
	if got := Tail(filepath.Join(t.TempDir(), "none"), 2); got != "" {
		t.Errorf("Tail(missing file) = %q, want \"\"", got)
	}
}

func TestFreeAddr(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("FreeAddr() = %q, %v, want 127.0.0.1:port", addr, err)
	}
	port, err := FreePort()
	if err != nil || port <= 0 {
		t.Errorf("FreePort() = %d, %v, want a port", port, err)
	}
}
