package sslprincipal

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/stretchr/testify/require"
)

func rawName(t *testing.T, n pkix.Name) []byte {
	t.Helper()
	der, err := asn1.Marshal(n.ToRDNSequence())
	require.NoError(t, err)
	return der
}

func TestDistinguishedName(t *testing.T) {
	for _, tc := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}}, "CN=alice,OU=eng,O=acme"},
		{pkix.Name{CommonName: "a,b=c+d#", Country: []string{"GB"}}, `CN=a\,b\=c\+d\#,C=GB`},
		{pkix.Name{CommonName: " x "}, `CN=\ x\ `},
		{pkix.Name{CommonName: "bob", SerialNumber: "7"}, "2.5.4.5=#130137,CN=bob"},
	} {
		got, err := DistinguishedName(rawName(t, tc.name))
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

func TestMapper(t *testing.T) {
	m, err := Parse(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),.*$/$1@$2/U, DEFAULT`)
	require.NoError(t, err)
	for dn, want := range map[string]string{
		"CN=Svc,OU=ServiceUsers,O=acme": "svc",
		"CN=alice,OU=eng,O=acme":        "ALICE@$2",
		"CN=solo":                       "CN=solo",
	} {
		got, err := m.Name(dn)
		require.NoError(t, err)
		require.Equal(t, want, got, dn)
	}
	require.Equal(t, "[RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),.*$/$1@$2/U, DEFAULT]", m.String())

	strict, err := Parse(`RULE:^CN=(.*?),.*$/$1/`)
	require.NoError(t, err)
	_, err = strict.Name("CN=solo")
	var nm *NoMatchingRuleError
	require.ErrorAs(t, err, &nm)
	require.EqualError(t, err, "No rules apply to CN=solo, rules [RULE:^CN=(.*?),.*$/$1]")

	_, err = Parse("RULE:a/b/X")
	require.EqualError(t, err, "Invalid rule: `RULE:a/b/X`, unmatched substring: `X`")
	_, err = Parse("NOTARULE")
	require.EqualError(t, err, "Invalid rule: `NOTARULE`, unmatched substring: `NOTARULE`")
}
