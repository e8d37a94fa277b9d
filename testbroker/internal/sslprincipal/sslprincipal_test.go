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

// A CN of each string type is written as Java's X500Principal writes it: the string types it
// decodes as text, whatever their alphabet, anything else as hex.
func TestDistinguishedNameValueTags(t *testing.T) {
	for _, tc := range []struct {
		tag   int
		value []byte
		want  string
	}{
		{asn1.TagPrintableString, []byte("svc_user@x"), "CN=svc_user@x"},
		{asn1.TagIA5String, []byte("a@b"), "CN=a@b"},
		{asn1.TagGeneralString, []byte("g\x80"), "CN=g\uFFFD"},
		{asn1.TagT61String, []byte("caf\xe9"), "CN=café"},
		{asn1.TagUTF8String, []byte("é"), "CN=é"},
		{asn1.TagBMPString, []byte{0, 'a', 0, 0xe9}, "CN=aé"},
		{asn1.TagNumericString, []byte("123"), "CN=#1203313233"},
		{asn1.TagOctetString, []byte("x"), "CN=#040178"},
	} {
		raw, err := asn1.Marshal([]rdnSET{{{
			Type:  asn1.ObjectIdentifier{2, 5, 4, 3},
			Value: asn1.RawValue{Class: asn1.ClassUniversal, Tag: tc.tag, Bytes: tc.value},
		}}})
		require.NoError(t, err)
		got, err := DistinguishedName(raw)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "tag %d", tc.tag)
	}
}

// A replacement Java's Matcher refuses fails the mapping of a name the rule applies to, with
// the exception's message; a rule with groups keeps a $n naming no group as text.
func TestMapperReplacementRefused(t *testing.T) {
	for rules, msg := range map[string]string{
		`RULE:^CN=.*$/$1/`:          "No group 1",
		`RULE:^CN=.*$/x$10/`:        "No group 1",
		`RULE:^CN=(.*)$/$y/`:        "Illegal group reference",
		`RULE:^CN=(.*)$/x$/`:        "Illegal group reference: group index is missing",
		`RULE:^CN=(.*)$/${}/`:       "named capturing group has 0 length name",
		`RULE:^CN=(.*)$/${a/`:       "named capturing group is missing trailing '}'",
		`RULE:^CN=(.*)$/${1a}/`:     "capturing group name {1a} starts with digit character",
		`RULE:^CN=(?P<n>.*)$/${m}/`: "No group with name {m}",
	} {
		m, err := Parse(rules)
		require.NoError(t, err, rules)
		_, err = m.Name("CN=alice")
		var re *ReplacementError
		require.ErrorAs(t, err, &re, rules)
		require.Equal(t, msg, re.Msg, rules)
	}
	for rules, want := range map[string]string{
		`RULE:^CN=.*$/$0!/`:         "CN=alice!",
		`RULE:^CN=(.*)$/$1$2/`:      "alice$2",
		`RULE:^CN=(?P<n>.*)$/${n}/`: "alice",
		`RULE:^CN=(.*)$/\$1/`:       "$1",
		`RULE:^CN=(.*)$/x\\/`:       `x\`,
	} {
		m, err := Parse(rules)
		require.NoError(t, err, rules)
		got, err := m.Name("CN=alice")
		require.NoError(t, err, rules)
		require.Equal(t, want, got, rules)
	}
}
