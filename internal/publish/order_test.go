package publish

import (
	"slices"
	"testing"
)

func TestCompareFromRight(t *testing.T) {
	names := []string{"b.y.org", "a.x.org", "x.org", "b.x.org", "a.b.x.org", "org", "a.y.org", "a.x.com"}
	slices.SortFunc(names, compareFromRight)
	want := []string{"a.x.com", "org", "x.org", "a.x.org", "b.x.org", "a.b.x.org", "a.y.org", "b.y.org"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted from the right = %q, want %q", names, want)
	}
}
