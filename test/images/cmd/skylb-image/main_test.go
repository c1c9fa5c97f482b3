package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePlatforms(t *testing.T) {
	for _, tc := range []struct {
		name      string
		platforms []string
		want      []string // nil: refused
	}{
		{name: "default", platforms: []string{"linux/amd64", "linux/arm64"}, want: []string{"amd64", "arm64"}},
		{name: "arm64 variant", platforms: []string{"linux/arm64/v8"}, want: []string{"arm64"}},
		{name: "other variant", platforms: []string{"linux/arm/v7"}},
		{name: "other OS", platforms: []string{"windows/amd64"}},
		{name: "no architecture", platforms: []string{"linux/"}},
		{name: "OS alone", platforms: []string{"linux"}},
		{name: "none", platforms: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePlatforms(tc.platforms)
			if tc.want == nil {
				if err == nil {
					t.Errorf("Got parsePlatforms(%q) = %q, want an error", tc.platforms, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePlatforms(%q): %v", tc.platforms, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parsePlatforms(%q) mismatch (-want +got):\n%s", tc.platforms, diff)
			}
		})
	}
}
