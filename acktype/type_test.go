package acktype_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/acktype"
)

func TestTypeProperties(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ          acktype.Type
		id           int8
		name         string
		valid, final bool
	}{
		{acktype.Gap, 0, "gap", false, true},
		{acktype.Accept, 1, "accept", true, true},
		{acktype.Release, 2, "release", true, true},
		{acktype.Reject, 3, "reject", true, true},
		{acktype.Renew, 4, "renew", true, false},
		{acktype.Type(5), 5, "acktype(5)", false, false},
		{acktype.Type(-1), -1, "acktype(-1)", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.id, int8(tc.typ))
			assert.Equal(t, tc.name, tc.typ.String())
			assert.Equal(t, tc.valid, tc.typ.Valid())
			assert.Equal(t, tc.final, tc.typ.Final())
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    acktype.Type
		wantErr string
	}{
		{in: "accept", want: acktype.Accept},
		{in: "RELEASE", want: acktype.Release},
		{in: "Reject", want: acktype.Reject},
		{in: "rEnEw", want: acktype.Renew},
		{in: "gap", wantErr: `Unknown acknowledge type "gap": use accept, release, reject or renew`},
		{in: "", wantErr: `Unknown acknowledge type "": use accept, release, reject or renew`},
		{in: " accept", wantErr: `Unknown acknowledge type " accept": use accept, release, reject or renew`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := acktype.Parse(tc.in)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, mustParse(t, got.String()), "String and Parse round-trip")
		})
	}
}

func mustParse(t *testing.T, s string) acktype.Type {
	t.Helper()
	typ, err := acktype.Parse(s)
	require.NoError(t, err)
	return typ
}

func TestFromID(t *testing.T) {
	t.Parallel()
	for id := int8(1); id <= 4; id++ {
		typ, err := acktype.FromID(id)
		require.NoError(t, err)
		assert.Equal(t, id, int8(typ))
	}
	for _, tc := range []struct {
		id   int8
		want string
	}{
		{0, "Unknown acknowledge type id: 0"},
		{5, "Unknown acknowledge type id: 5"},
		{7, "Unknown acknowledge type id: 7"},
		{-1, "Unknown acknowledge type id: -1"},
	} {
		_, err := acktype.FromID(tc.id)
		assert.EqualError(t, err, tc.want)
	}
}
