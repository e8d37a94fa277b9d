package apiversions_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/apiversions"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	var reg apiversions.Registry
	_, ok := reg.Get(1)
	assert.False(t, ok)

	reg.Set(1, versions(t, kafka41...))
	reg.Set(2, versions(t, kafka42...))
	v, ok := reg.Get(1)
	require.True(t, ok)
	assert.False(t, v.SupportsRenew())
	v, ok = reg.Get(2)
	require.True(t, ok)
	assert.True(t, v.SupportsRenew())

	reg.Set(1, versions(t, kafka42...)) // upgraded in place
	v, _ = reg.Get(1)
	assert.True(t, v.SupportsRenew())

	reg.Delete(2)
	_, ok = reg.Get(2)
	assert.False(t, ok)
	reg.Delete(99)
}

func TestRegistryConcurrentUse(t *testing.T) {
	t.Parallel()
	var reg apiversions.Registry
	v41, v42 := versions(t, kafka41...), versions(t, kafka42...)
	var wg sync.WaitGroup
	for node := range int32(8) {
		wg.Go(func() {
			for i := range 200 {
				if i%2 == 0 {
					reg.Set(node, v41)
				} else {
					reg.Set(node, v42)
				}
				if v, ok := reg.Get((node + 1) % 8); ok {
					v.SupportsRenew()
				}
				if i%50 == 0 {
					reg.Delete(node)
				}
			}
		})
	}
	wg.Wait()
}
