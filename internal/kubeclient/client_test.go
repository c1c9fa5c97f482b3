package kubeclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

func TestEventsHaveTheirOwnRateLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"Service","apiVersion":"v1","metadata":{"name":"web","namespace":"default"}}`)
	}))
	defer srv.Close()

	// Rates so low that no token comes back during the test.
	c, err := NewClient(&rest.Config{Host: srv.URL, QPS: 0.001, Burst: 1}, Rate{QPS: 0.002, Burst: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(context.Background(), Services, "default", "web", types.MergePatchType, []byte(`{}`), "status"); err != nil {
		t.Fatal(err)
	}
	api, events := c.client(Services).GetRateLimiter(), c.client(Events).GetRateLimiter()
	if got := api.QPS(); got != 0.001 {
		t.Errorf("Got the Services' QPS %v, want 0.001", got)
	}
	if got := events.QPS(); got != 0.002 {
		t.Errorf("Got the Events' QPS %v, want 0.002", got)
	}
	if api.TryAccept() {
		t.Error("Got a request of the API admitted after the one of its burst of 1, want none")
	}
	for i := range 3 {
		if !events.TryAccept() {
			t.Errorf("Got Event %d of a burst of 3 held back behind the Service's status patch, want it sent", i+1)
		}
	}

	// Without a rate of their own, Events get client-go's default.
	c, err = NewClient(&rest.Config{Host: srv.URL, QPS: 50, Burst: 100}, Rate{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.client(Events).GetRateLimiter().QPS(); got != rest.DefaultQPS {
		t.Errorf("Got the Events' default QPS %v, want client-go's %v", got, rest.DefaultQPS)
	}
}
