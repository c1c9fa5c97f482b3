package dnsprobe

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

func TestQuery(t *testing.T) {
	srv := startServer(t, map[string][]string{
		"served.test":          {serve},
		"refused.test":         {refuse},
		"failing.test":         {servfail},
		"silent.test":          {drop},
		"large.test":           {truncate},
		"lb.parent.test":       {parentSOA},
		"reverse.in-addr.arpa": {serve},
	})
	tests := []struct {
		zone string
		want Result
	}{
		{"served.test", Result{Served, "its SOA"}},
		{"reverse.in-addr.arpa", Result{Served, "its SOA"}},
		{"refused.test", Result{NotServed, "REFUSED"}},
		{"lb.parent.test", Result{NotServed, "the SOA of parent.test"}},
		{"failing.test", Result{Unknown, "SERVFAIL"}},
		{"large.test", Result{Served, "its SOA"}},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			if got := Query(t.Context(), srv.addr, tt.zone, time.Second); got != tt.want {
				t.Errorf("Query(%s) = %+v, want %+v", tt.zone, got, tt.want)
			}
		})
	}
	if got := srv.count("tcp"); got != 1 {
		t.Errorf("Got %d queries over TCP, want 1: the truncated reply's", got)
	}

	t.Run("no reply", func(t *testing.T) {
		start := time.Now()
		got := Query(t.Context(), srv.addr, "silent.test", 100*time.Millisecond)
		if got.State != Unknown || !strings.Contains(got.Answer, "timeout") {
			t.Errorf("Query(silent.test) = %+v, want Unknown with a timeout", got)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Query(silent.test) took %v with a timeout of 100ms", d)
		}
	})
	t.Run("nothing listens", func(t *testing.T) {
		l, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.LocalAddr().String()
		l.Close()
		if got := Query(t.Context(), addr, "served.test", 200*time.Millisecond); got.State != Unknown || got.Answer == "" {
			t.Errorf("Query(%s) = %+v, want Unknown with the error", addr, got)
		}
	})
}

// reports returns a Report that sends each Change to the channel returned.
func reports() (func(context.Context, Change), chan Change) {
	ch := make(chan Change, 100)
	return func(_ context.Context, c Change) { ch <- c }, ch
}

// next returns the next Change reported.
func next(t *testing.T, ch chan Change) Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no Change reported within 10s")
		return Change{}
	}
}

// expect checks that the next Change reported is want.
func expect(t *testing.T, ch chan Change, want Change) {
	t.Helper()
	if got := next(t, ch); got != want {
		t.Errorf("Got Change %+v, want %+v", got, want)
	}
}

// none checks that nothing more was reported.
func none(t *testing.T, ch chan Change) {
	t.Helper()
	select {
	case c := <-ch:
		t.Errorf("Got Change %+v, want none", c)
	default:
	}
}

// run starts c until the test ends.
func run(t *testing.T, c *Checker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		c.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestCheckerReportsChanges: each zone is reported when it is first found
// served or not, again only when that changes, and not for a spell without
// an answer that tells.
func TestCheckerReportsChanges(t *testing.T) {
	srv := startServer(t, map[string][]string{
		"a.test": {serve},
		"b.test": {refuse},
		// Starting: it fails three times, then serves.
		"c.test": {servfail, servfail, servfail, serve},
	})
	report, ch := reports()
	// The queries so far when c.test is reported: Run's goroutine reports
	// between two checks, with no query in flight.
	var atC map[string]int
	c := New(Config{
		Address: srv.addr, Zones: []string{"a.test", "b.test", "c.test"},
		Interval: 20 * time.Millisecond, Timeout: time.Second, StartWindow: 5 * time.Second, Retry: 10 * time.Millisecond,
		Report: func(ctx context.Context, c Change) {
			if c.Zone == "c.test" && atC == nil {
				atC = map[string]int{"a.test": srv.count("a.test"), "c.test": srv.count("c.test")}
			}
			report(ctx, c)
		},
	})
	if got := c.States(); got["a.test"] != Unknown || len(got) != 3 {
		t.Errorf("States() before Run = %v, want every zone unknown", got)
	}
	run(t, c)

	expect(t, ch, Change{Zone: "a.test", Result: Result{Served, "its SOA"}, Prev: Unknown})
	expect(t, ch, Change{Zone: "b.test", Result: Result{NotServed, "REFUSED"}, Prev: Unknown})
	expect(t, ch, Change{Zone: "c.test", Result: Result{Served, "its SOA"}, Prev: Unknown})
	if atC["c.test"] != 4 || atC["a.test"] != 1 {
		t.Errorf("Got %v queries when c.test was reported, want 4 of c.test (again after each SERVFAIL) and 1 of a.test (answered at once)", atC)
	}
	// Five more checks of every zone, each as the one before: nothing.
	srv.waitQueries(t, "a.test", srv.count("a.test")+5)
	none(t, ch)
	if got := c.States(); got["a.test"] != Served || got["b.test"] != NotServed || got["c.test"] != Served {
		t.Errorf("States() = %v", got)
	}

	// b is served now.
	srv.set("b.test", serve)
	expect(t, ch, Change{Zone: "b.test", Result: Result{Served, "its SOA"}, Prev: NotServed})
	// a fails for a while: its state is unknown, and nothing is reported.
	srv.set("a.test", servfail)
	srv.waitQueries(t, "a.test", srv.count("a.test")+3)
	none(t, ch)
	if got := c.States()["a.test"]; got != Unknown {
		t.Errorf("States()[a.test] while it fails = %v, want unknown", got)
	}
	// Then it is refused, fails again, and is refused again: one report.
	srv.set("a.test", refuse, servfail, servfail, refuse)
	expect(t, ch, Change{Zone: "a.test", Result: Result{NotServed, "REFUSED"}, Prev: Served})
	srv.waitQueries(t, "a.test", srv.count("a.test")+5)
	none(t, ch)
	srv.set("a.test", serve)
	expect(t, ch, Change{Zone: "a.test", Result: Result{Served, "its SOA"}, Prev: NotServed})
}

// TestCheckerStartWindow: a zone without an answer that tells is reported
// unknown once, when the start window ends, and as soon as it is answered.
func TestCheckerStartWindow(t *testing.T) {
	srv := startServer(t, map[string][]string{"d.test": {drop}})
	report, ch := reports()
	start := time.Now()
	c := New(Config{
		Address: srv.addr, Zones: []string{"d.test"},
		Interval: 20 * time.Millisecond, Timeout: 50 * time.Millisecond, StartWindow: 300 * time.Millisecond, Retry: 20 * time.Millisecond,
		Report: report,
	})
	run(t, c)
	got := next(t, ch)
	if got.Zone != "d.test" || got.State != Unknown || got.Prev != Unknown || !strings.Contains(got.Answer, "timeout") {
		t.Errorf("Got %+v, want d.test unknown with a timeout", got)
	}
	// The last retry is the last one to start within the window.
	if d := time.Since(start); d < 300*time.Millisecond-20*time.Millisecond {
		t.Errorf("unknown reported after %v, before the last retry of the start window of 300ms", d)
	}
	if n := srv.count("d.test"); n < 3 {
		t.Errorf("Got %d queries about d.test in the start window, want one every retry", n)
	}
	srv.waitQueries(t, "d.test", srv.count("d.test")+3)
	none(t, ch)

	srv.set("d.test", refuse)
	expect(t, ch, Change{Zone: "d.test", Result: Result{NotServed, "REFUSED"}, Prev: Unknown})
}

// TestCheckerStops: Run returns once ctx ends, a query in flight included.
func TestCheckerStops(t *testing.T) {
	srv := startServer(t, map[string][]string{"e.test": {drop}})
	c := New(Config{Address: srv.addr, Zones: []string{"e.test"}, Timeout: 500 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		c.Run(ctx)
		close(done)
	}()
	srv.waitQueries(t, "e.test", 1)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of ctx ending")
	}
}
