package etcdtest

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skylb/skylb/internal/skydns"
)

// Records returns the records stored under prefix as "name host" lines,
// sorted; a value that does not decode is "name garbage".
func Records(ctx context.Context, c *clientv3.Client, prefix string) ([]string, error) {
	resp, err := c.Get(ctx, prefix+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range resp.Kvs {
		name, _, _ := skydns.SplitKey(prefix, string(kv.Key))
		v, err := skydns.Decode(kv.Value)
		if err != nil {
			out = append(out, name+" garbage")
			continue
		}
		out = append(out, name+" "+v.Host)
	}
	slices.Sort(out)
	return out, nil
}

// Revision returns the revision etcd is at, or fails the test.
func Revision(t testing.TB, c *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, "/")
	if err != nil {
		t.Fatalf("get revision: %v", err)
	}
	return resp.Header.Revision
}
