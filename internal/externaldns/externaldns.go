// Package externaldns holds the API types of external-dns's DNSEndpoint
// (externaldns.k8s.io/v1alpha1), as far as skylb reads and writes them: the
// endpoints of its spec and the observed generation of its status. They are
// declared here rather than imported, since external-dns's module brings its
// every provider's dependencies with it.
package externaldns

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of DNSEndpoints.
var GroupVersion = schema.GroupVersion{Group: "externaldns.k8s.io", Version: "v1alpha1"}

// AddToScheme registers DNSEndpoint and DNSEndpointList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &DNSEndpoint{}, &DNSEndpointList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// DNSEndpoint asks for DNS records: one or more endpoints, each a name and
// the targets of one record type.
type DNSEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSEndpointSpec   `json:"spec,omitempty"`
	Status DNSEndpointStatus `json:"status,omitempty"`
}

// DNSEndpointSpec is the records a DNSEndpoint asks for.
type DNSEndpointSpec struct {
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// Endpoint is the records of one name and type.
type Endpoint struct {
	DNSName    string   `json:"dnsName,omitempty"`
	Targets    []string `json:"targets,omitempty"`
	RecordType string   `json:"recordType,omitempty"`
	// SetIdentifier tells apart the endpoints of one name and type that a
	// provider routes between; skylb merges them.
	SetIdentifier    string                     `json:"setIdentifier,omitempty"`
	RecordTTL        int64                      `json:"recordTTL,omitempty"`
	Labels           map[string]string          `json:"labels,omitempty"`
	ProviderSpecific []ProviderSpecificProperty `json:"providerSpecific,omitempty"`
}

// ProviderSpecificProperty is an option of one DNS provider; skylb reads none.
type ProviderSpecificProperty struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// DNSEndpointStatus is what the controller publishing a DNSEndpoint says of it.
type DNSEndpointStatus struct {
	// ObservedGeneration is the generation whose records were published.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DNSEndpointList is a list of DNSEndpoints.
type DNSEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSEndpoint `json:"items"`
}

// DeepCopyInto copies e into out.
func (e *Endpoint) DeepCopyInto(out *Endpoint) {
	*out = *e
	out.Targets = append([]string(nil), e.Targets...)
	out.Labels = maps.Clone(e.Labels)
	out.ProviderSpecific = append([]ProviderSpecificProperty(nil), e.ProviderSpecific...)
}

// DeepCopyInto copies d into out.
func (d *DNSEndpoint) DeepCopyInto(out *DNSEndpoint) {
	*out = *d
	d.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if d.Spec.Endpoints != nil {
		out.Spec.Endpoints = make([]Endpoint, len(d.Spec.Endpoints))
		for i := range d.Spec.Endpoints {
			d.Spec.Endpoints[i].DeepCopyInto(&out.Spec.Endpoints[i])
		}
	}
}

// DeepCopy returns a copy of d.
func (d *DNSEndpoint) DeepCopy() *DNSEndpoint {
	if d == nil {
		return nil
	}
	out := new(DNSEndpoint)
	d.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (d *DNSEndpoint) DeepCopyObject() runtime.Object { return d.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *DNSEndpointList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &DNSEndpointList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]DNSEndpoint, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
