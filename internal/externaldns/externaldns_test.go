package externaldns

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJSON: the fields are those of external-dns's CRD.
func TestJSON(t *testing.T) {
	in := `{"apiVersion":"externaldns.k8s.io/v1alpha1","kind":"DNSEndpoint","metadata":{"name":"r","namespace":"shop","generation":2},` +
		`"spec":{"endpoints":[{"dnsName":"www.example.org","targets":["192.0.2.1"],"recordType":"A","setIdentifier":"a","recordTTL":60,` +
		`"labels":{"k":"v"},"providerSpecific":[{"name":"n","value":"v"}]}]},"status":{"observedGeneration":1}}`
	var d DNSEndpoint
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	want := Endpoint{DNSName: "www.example.org", Targets: []string{"192.0.2.1"}, RecordType: "A", SetIdentifier: "a", RecordTTL: 60,
		Labels: map[string]string{"k": "v"}, ProviderSpecific: []ProviderSpecificProperty{{Name: "n", Value: "v"}}}
	if len(d.Spec.Endpoints) != 1 || d.Status.ObservedGeneration != 1 || d.Generation != 2 {
		t.Fatalf("Unmarshal = %+v", d)
	}
	if diff := cmp.Diff(want, d.Spec.Endpoints[0]); diff != "" {
		t.Errorf("endpoint (-want +got):\n%s", diff)
	}
	// A deep copy shares nothing with its original.
	c := d.DeepCopy()
	c.Spec.Endpoints[0].Targets[0], c.Spec.Endpoints[0].Labels["k"] = "192.0.2.9", "w"
	if d.Spec.Endpoints[0].Targets[0] != "192.0.2.1" || d.Spec.Endpoints[0].Labels["k"] != "v" {
		t.Errorf("DeepCopy shares the original's slices or maps: %+v", d.Spec.Endpoints[0])
	}
}
