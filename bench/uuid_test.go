package bench

import (
	"testing"

	"github.com/gofrs/uuid/v5"
	google "github.com/google/uuid"
	"github.com/idgen/idgen/libs/uuidv7"
)

// BenchmarkUUIDv7 compares uuidv7.New (monotonic: never reorders, even past 4,096 per ms or
// across a clock step back) with gofrs NewV7 and google/uuid NewV7, single and parallel.
func BenchmarkUUIDv7(b *testing.B) {
	impls := []struct {
		name string
		fn   func() error
	}{
		{"idgen", func() error { _, err := uuidv7.New(); return err }},
		{"gofrs", func() error { _, err := uuid.NewV7(); return err }},
		{"google", func() error { _, err := google.NewV7(); return err }},
	}
	for _, im := range impls {
		b.Run(im.name+"/single", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := im.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(im.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := im.fn(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
