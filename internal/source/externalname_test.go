package source

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func externalName(target string) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = target
	}
}

func TestExternalNameService(t *testing.T) {
	tests := []struct {
		name   string
		policy ExternalNames
		svc    *corev1.Service
		want   *Publication
	}{
		{
			name: "annotated: the generated and annotated names, a CNAME to the external name",
			svc:  newService("shop", "db", externalName("db.example.net"), annotate(AnnotationHostname, "db.example.com")),
			want: svcPub("shop", "db", Publication{
				Names:   []Name{gen("db.shop.example.org", "example.org"), host("db.example.com", "example.com")},
				Targets: []string{"db.example.net"},
			}),
		},
		{
			name: "annotated: external-dns's annotation counts",
			svc:  newService("shop", "db", externalName("db.example.net"), annotate("external-dns.alpha.kubernetes.io/hostname", "db.example.com")),
			want: svcPub("shop", "db", Publication{
				Names:   []Name{gen("db.shop.example.org", "example.org"), host("db.example.com", "example.com")},
				Targets: []string{"db.example.net"},
			}),
		},
		{
			name: "annotated: an empty annotation asks for the generated names alone",
			svc:  newService("default", "db", externalName("DB.Example.NET."), annotate(AnnotationHostname, "")),
			want: svcPub("default", "db", Publication{
				Names:   []Name{gen("db.default.example.org", "example.org"), gen("db.example.org", "example.org")},
				Targets: []string{"db.example.net"},
			}),
		},
		{
			name: "annotated: no annotation, not published",
			svc:  newService("shop", "db", externalName("db.prod.svc.cluster.local")),
		},
		{
			name:   "all: published without an annotation",
			policy: ExternalNamesAll,
			svc:    newService("shop", "db", externalName("db.prod.svc.cluster.local")),
			want: svcPub("shop", "db", Publication{
				Names:   []Name{gen("db.shop.example.org", "example.org")},
				Targets: []string{"db.prod.svc.cluster.local"},
			}),
		},
		{
			name:   "none: never published",
			policy: ExternalNamesNone,
			svc:    newService("shop", "db", externalName("db.example.net"), annotate(AnnotationHostname, "db.example.com")),
		},
		{
			name: "an IP address is no external name: no CNAME, the names kept",
			svc:  newService("shop", "db", externalName("192.0.2.10"), annotate(AnnotationHostname, "")),
			want: svcPub("shop", "db", Publication{
				Names:    []Name{gen("db.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidExternalName, `"192.0.2.10": an IP address`)},
			}),
		},
		{
			name: "an invalid external name: no CNAME, other problems told too",
			svc:  newService("shop", "db", externalName("*.example.net"), annotate(AnnotationHostname, "db.example.com,bad_name.example.com")),
			want: svcPub("shop", "db", Publication{
				Names: []Name{gen("db.shop.example.org", "example.org"), host("db.example.com", "example.com")},
				Problems: []Problem{
					problem(ReasonInvalidHostname, "bad_name.example.com"),
					problem(ReasonInvalidExternalName, "*.example.net"),
				},
			}),
		},
		{
			name: "an empty external name",
			svc:  newService("shop", "db", externalName(""), annotate(AnnotationHostname, "")),
			want: svcPub("shop", "db", Publication{
				Names:    []Name{gen("db.shop.example.org", "example.org")},
				Problems: []Problem{problem(ReasonInvalidExternalName, "empty name")},
			}),
		},
		{
			name: "a TTL annotation applies",
			svc:  newService("shop", "db", externalName("db.example.net"), annotate(AnnotationHostname, "", AnnotationTTL, "60")),
			want: svcPub("shop", "db", Publication{
				Names:   []Name{gen("db.shop.example.org", "example.org")},
				Targets: []string{"db.example.net"},
				TTL:     60,
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig
			cfg.ExternalNames = tt.policy
			b := NewBuilder(cfg, Listers{})
			got := b.Service(tt.svc)
			if diff := diffPub(tt.want, got); diff != "" {
				t.Errorf("Service(%s/%s) mismatch (-want +got):\n%s", tt.svc.Namespace, tt.svc.Name, diff)
			}
			checkProblemMessages(t, tt.want, got)
			if got != nil && (got.WriteStatus || got.Mode != ModeExternalName || len(got.Addresses) > 0) {
				t.Errorf("Service(%s/%s) = %+v, want no status, mode %s and no addresses", tt.svc.Namespace, tt.svc.Name, got, ModeExternalName)
			}
		})
	}
}

func TestParseExternalNames(t *testing.T) {
	for in, want := range map[string]ExternalNames{"": ExternalNamesAnnotated, "annotated": ExternalNamesAnnotated, " all ": ExternalNamesAll, "none": ExternalNamesNone} {
		if got, err := ParseExternalNames(in); err != nil || got != want {
			t.Errorf("ParseExternalNames(%q) = %q, %v; want %q, <nil>", in, got, err, want)
		}
	}
	for _, in := range []string{"All", "annotations", "true"} {
		if got, err := ParseExternalNames(in); err == nil {
			t.Errorf("ParseExternalNames(%q) = %q, <nil>; want an error", in, got)
		}
	}
}
