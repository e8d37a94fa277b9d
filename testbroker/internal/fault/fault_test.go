package fault

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMatch(t *testing.T) {
	produce := Request{Key: 0, Broker: 1, Topics: []string{"orders"}}
	fetchOther := Request{Key: 1, Broker: 0, Topics: []string{"audit"}}
	join := Request{Key: 11, Broker: 0, Groups: []string{"g"}}

	cases := []struct {
		name string
		rule Rule
		req  Request
		want bool
	}{
		{"any matches all", Rule{}, fetchOther, true},
		{"key", Rule{Keys: []int16{0}}, produce, true},
		{"other key", Rule{Keys: []int16{1}}, produce, false},
		{"broker", Rule{Brokers: []int32{1}}, produce, true},
		{"other broker", Rule{Brokers: []int32{0}}, produce, false},
		{"topic", Rule{Topic: "orders"}, produce, true},
		{"other topic", Rule{Topic: "orders"}, fetchOther, false},
		{"group", Rule{Group: "g"}, join, true},
		{"group on a request without groups", Rule{Group: "g"}, produce, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSet()
			s.Add(tc.rule)
			_, ok := s.Match(tc.req)
			assert.Equal(t, tc.want, ok)
		})
	}
}

func TestTimesAndOrder(t *testing.T) {
	s := NewSet()
	s.Add(Rule{ErrorCode: 6, Times: 2})
	s.Add(Rule{Drop: true})
	req := Request{Key: 3}

	var last Action
	for range 2 {
		a, ok := s.Match(req)
		assert.True(t, ok)
		assert.Equal(t, int16(6), a.ErrorCode)
		last = a
	}
	a, ok := s.Match(req)
	assert.True(t, ok)
	assert.True(t, a.Drop, "the limited rule ran out, the next one applies")
	assert.Equal(t, 2, s.Len(), "the spent rule counts until its last request took its action")
	last.Taken()
	assert.Equal(t, 1, s.Len())
}

func TestRemoveAndClear(t *testing.T) {
	s := NewSet()
	id := s.Add(Rule{})
	assert.True(t, s.Remove(id))
	assert.False(t, s.Remove(id))
	_, ok := s.Match(Request{})
	assert.False(t, ok)
	s.Add(Rule{})
	s.Clear()
	assert.Zero(t, s.Len())
}
