package stack

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Eventually polls cond every 20ms until it holds, and fails t when it still
// does not after limit, with what and the detail cond last returned.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, limit, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreeAddr returns a loopback host:port free for TCP at the time of the call.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// FreePort returns a loopback port that is free for TCP and UDP at the time of
// the call.
func FreePort() (int, error) {
	return freePort(nil)
}

// Bin returns <root>/bin/name, a binary scripts/build-bins.sh builds, and
// fails t when it has not been built.
func Bin(t testing.TB, root, name string) string {
	t.Helper()
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: build it with scripts/build-bins.sh %s", err, name)
	}
	return p
}
