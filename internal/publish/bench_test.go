package publish

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"testing"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/etcdtest"
	"github.com/skylb/skylb/internal/skydns"
)

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// records returns n A records of one name.
func records(name string, n int) []skydns.Record {
	out := make([]skydns.Record, n)
	a := netip.MustParseAddr("10.0.0.1")
	for i := range out {
		out[i] = skydns.Record{Name: name, Host: a.String(), TTL: 30, Source: "service/shop/web"}
		a = a.Next()
	}
	return out
}

// BenchmarkDiff measures the comparison of one name's wanted records with the
// view: encoding their keys and values and finding what to write.
func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{1, 10, 64} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			p := New(nil, Config{Prefix: "/skydns", Owner: "bench", Log: quiet()})
			p.Set("web.shop.example.org", Want{Records: records("web.shop.example.org", n)})
			// The view holds all but the last record.
			p.lock() // receives the Set
			nm := p.view.names["web.shop.example.org"]
			p.mu.Unlock()
			for _, w := range p.encodeWants("web.shop.example.org", nm.records)[:n-1] {
				nm.put(entry{key: p.relKey("web.shop.example.org", w.key), sum: digestOf(w.value), host: w.host, modRev: 1}, "")
			}
			b.ResetTimer()
			for range b.N {
				p.lock()
				c, ok := p.diffLocked("web.shop.example.org", true)
				p.mu.Unlock()
				if !ok || len(c.puts) != 1 {
					b.Fatalf("diff = %d puts, want 1", len(c.puts))
				}
			}
		})
	}
}

// BenchmarkSetUnchanged measures handing over a name's records when they have
// not changed, which the controller does for every name of a group whenever
// one of its objects changes: the Set, and its receipt by the writer.
func BenchmarkSetUnchanged(b *testing.B) {
	p := New(nil, Config{Prefix: "/skydns", Owner: "bench", Log: quiet()})
	recs := records("web.shop.example.org", 3)
	p.Set("web.shop.example.org", Want{Records: recs})
	b.ResetTimer()
	for range b.N {
		p.Set("web.shop.example.org", Want{Records: recs})
		p.lock()
		p.mu.Unlock()
	}
}

// BenchmarkFlush measures writing many names to a real etcd (in-process, with
// mutual TLS) from a cold start: what skylb does after its caches synced; with
// claims, also the claim of every name, as a cluster sharing the etcd writes.
func BenchmarkFlush(b *testing.B) {
	if testing.Short() {
		b.Skip("needs etcd")
	}
	srv := etcdtest.Start(b)
	client := srv.NewClient(b)
	for _, bc := range []struct {
		names, inFlight int
		claims          string
	}{
		{names: 5000, inFlight: 1},
		{names: 5000, inFlight: 4},
		{names: 10000, inFlight: 4, claims: "/skylb/claims"},
	} {
		b.Run(fmt.Sprintf("names=%d,in-flight=%d,claims=%t", bc.names, bc.inFlight, bc.claims != ""), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				ctx, cancel := context.WithCancel(context.Background())
				for _, prefix := range []string{"/skydns/", "/skylb/claims/"} {
					if _, err := client.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
						b.Fatal(err)
					}
				}
				p := New(client, Config{Prefix: "/skydns", Owner: "bench", MaxTxnsInFlight: bc.inFlight, ClaimPrefix: bc.claims, Log: quiet()})
				done := make(chan struct{})
				go func() { defer close(done); p.Run(ctx) }()
				for i := range bc.names {
					name := fmt.Sprintf("svc-%04d.ns-%02d.example.org", i%100, i/100)
					p.Set(name, Want{Records: records(name, 1)})
				}
				b.StartTimer()
				p.Complete()
				if err := p.WaitIdle(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cancel()
				<-done
				st := p.Stats()
				b.ReportMetric(float64(st.Txns), "txns/op")
				b.ReportMetric(float64(st.TxnErrors), "refused-txns/op")
				b.StartTimer()
			}
		})
	}
}

// encodeWants is the keys a Publisher of p's configuration wants for records.
func (p *Publisher) encodeWants(stored string, records []skydns.Record) []want {
	wants, _ := encodeWants(p.cfg.Prefix, p.cfg.Owner, stored, records)
	return wants
}
