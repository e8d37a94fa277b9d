package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseProperties reads every form Java's Properties.load accepts.
func TestParseProperties(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       map[string]string
	}{
		{"separators", "a=1\nb:2\nc 3\nd = 4\ne\t:\t5\n", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}},
		{"comments and blank lines", "# comment\n  ! also\n\n   \nk=v\n", map[string]string{"k": "v"}},
		{"leading whitespace, trailing kept", "   k = v  \n", map[string]string{"k": "v  "}},
		{"no value", "k\nl=\n", map[string]string{"k": "", "l": ""}},
		{"a later key wins", "k=1\nk=2\n", map[string]string{"k": "2"}},
		{"continuation drops the next line's indentation", "k=a \\\n    b\\\n c\n", map[string]string{"k": "a bc"}},
		{"an even number of backslashes does not continue", "k=a\\\\\nl=b\n", map[string]string{"k": `a\`, "l": "b"}},
		{"continuation at the end of the text", "k=a\\", map[string]string{"k": "a"}},
		{"escapes", `k=\t\n\r\f\u0041\=\:\#\x`, map[string]string{"k": "\t\n\r\fA=:#x"}},
		{"escaped separator in the key", `a\=b\ c=d`, map[string]string{"a=b c": "d"}},
		{"CRLF and CR line ends", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"a second separator is part of the value", "k==v:w", map[string]string{"k": "=v:w"}},
	} {
		got, err := parseProperties(tc.text)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	for _, text := range []string{`k=\u00`, `k=\uZZZZ`} {
		_, err := parseProperties(text)
		assert.EqualError(t, err, `Malformed \uxxxx encoding.`, text)
	}
}

// TestParseJAAS reads every form Kafka's JaasConfig accepts and refuses what it refuses, with
// its messages.
func TestParseJAAS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config string
		want         jaasEntry
	}{
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`,
			jaasEntry{plainLoginModule, "REQUIRED", map[string]string{"username": "u", "password": "p"}}},
		{"single quotes, bare words, any case flag", `org.apache.kafka.common.security.scram.ScramLoginModule Optional username='u' password=p$w_rd;`,
			jaasEntry{scramLoginModule, "OPTIONAL", map[string]string{"username": "u", "password": "p$w_rd"}}},
		{"requisite", `M requisite;`, jaasEntry{"M", "REQUISITE", map[string]string{}}},
		{"sufficient", `M SUFFICIENT;`, jaasEntry{"M", "SUFFICIENT", map[string]string{}}},
		{"quoted escapes", `M required password="a\"b\\c\td\101" other='x"y';`,
			jaasEntry{"M", "REQUIRED", map[string]string{"password": "a\"b\\c\tdA", "other": `x"y`}}},
		{"comments and line breaks", "M required // the module\n /* a\n comment */ username=\"u\"\n\tpassword=\"p\" ;",
			jaasEntry{"M", "REQUIRED", map[string]string{"username": "u", "password": "p"}}},
		{"a lone slash comments out the line", "M required / username=\"x\"\n;", jaasEntry{"M", "REQUIRED", map[string]string{}}},
		{"an unterminated quote ends at the line end", "M required password=\"p\n;", jaasEntry{"M", "REQUIRED", map[string]string{"password": "p"}}},
		{"OAUTHBEARER", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";`,
			jaasEntry{oauthLoginModule, "REQUIRED", map[string]string{"unsecuredLoginStringClaim_sub": "alice"}}},
	} {
		got, err := parseJAAS(tc.config)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	for _, tc := range []struct{ config, msg string }{
		{"", "Login module not specified in JAAS config"},
		{"  // nothing\n", "Login module not specified in JAAS config"},
		{"M", "Login module control flag not specified in JAAS config"},
		{"M ;", "Login module control flag is not available in the JAAS config"},
		{"M always;", "Invalid login module control flag 'always' in JAAS config"},
		{`M required username="u"`, "JAAS config entry not terminated by semi-colon"},
		{`M required username;`, "Value not specified for key 'username' in JAAS config"},
		{`M required username=;`, "Value not specified for key 'username' in JAAS config"},
		{`M required password=123;`, "Value not specified for key 'password' in JAAS config"},
		{`M required password=-x;`, "Value not specified for key 'password' in JAAS config"},
		{`M required username=`, "Value not specified for key 'username' in JAAS config"},
		{`M required; N required;`, "JAAS config property contains 2 login modules, should be 1 module"},
	} {
		_, err := parseJAAS(tc.config)
		assert.EqualError(t, err, tc.msg, tc.config)
	}
}
