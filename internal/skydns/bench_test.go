package skydns_test

import (
	"testing"

	"github.com/skylb/skylb/internal/skydns"
)

var benchRecord = skydns.Record{Name: "web.shop.example.org", Host: "192.0.2.10", TTL: 30, Source: "service/shop/web"}

// BenchmarkKey measures the etcd key of a record: its name's path and the
// owner's hash label.
func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		_ = skydns.Key("/skydns", "default", benchRecord)
	}
}

// BenchmarkEncode measures the JSON value of a record.
func BenchmarkEncode(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		_ = skydns.Encode("default", benchRecord)
	}
}

// BenchmarkDecode measures reading a stored value, as the view of etcd does
// for every key it lists or watches.
func BenchmarkDecode(b *testing.B) {
	v := skydns.Encode("default", benchRecord)
	b.ReportAllocs()
	for range b.N {
		if _, err := skydns.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}
