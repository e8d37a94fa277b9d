package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kshare/kshare/testbroker"
)

// securedCluster starts a testbroker with TLS (a generated CA, written to a PEM file whose
// path it returns) and SASL PLAIN and SCRAM-SHA-512 for alice.
func securedCluster(t *testing.T) (*testbroker.Cluster, string) {
	t.Helper()
	c := testbroker.StartT(t, testbroker.Topic("orders", 2), testbroker.GeneratedTLS(),
		testbroker.SASL("PLAIN", "SCRAM-SHA-512"), testbroker.User("alice", "alice-secret"))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, c.TLSCAPEM(), 0o600))
	return c, ca
}

// writeFile writes text to a new file and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// scramConfig writes a --command-config file that connects as alice with SASL_SSL and
// SCRAM-SHA-512, trusting the CA in the PEM file ca.
func scramConfig(t *testing.T, ca string) string {
	t.Helper()
	return writeFile(t, "scram.properties", ""+
		"security.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"alice-secret\";\n"+
		"ssl.truststore.type=PEM\n"+
		"ssl.truststore.location="+ca+"\n")
}

// runOn runs the tool against c with args and returns its exit code, stdout and stderr.
func runOn(t *testing.T, c *testbroker.Cluster, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	rc := run(testCtx(t), &stdout, &stderr, append([]string{"--bootstrap-server", strings.Join(c.Addrs(), ",")}, args...))
	return rc, stdout.String(), stderr.String()
}

// inlinePEM is pem as a properties value continued over lines, as Kafka's documentation
// writes ssl.truststore.certificates.
func inlinePEM(pem []byte) string {
	return strings.ReplaceAll(strings.TrimSpace(string(pem)), "\n", " \\\n  ")
}

// TestSecuredClusterConnects creates, lists and describes a share group on a cluster with
// TLS and SASL, connecting with a --command-config file of each accepted kind and with the
// shortcut flags.
func TestSecuredClusterConnects(t *testing.T) {
	t.Parallel()
	c, ca := securedCluster(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"SASL_SSL PLAIN, truststore location", []string{"--command-config", writeFile(t, "plain.properties", ""+
			"# PLAIN over TLS\n"+
			"security.protocol=SASL_SSL\n"+
			"sasl.mechanism=PLAIN\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"alice-secret\";\n"+
			"ssl.truststore.type=PEM\n"+
			"ssl.truststore.location="+ca+"\n")}},
		{"SASL_SSL SCRAM-SHA-512, inline truststore", []string{"--command-config", writeFile(t, "scram.properties", ""+
			"security.protocol = sasl_ssl\n"+
			"sasl.mechanism : SCRAM-SHA-512\n"+
			"sasl.jaas.config org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"+
			"    username='alice' \\\n"+
			"    password=\"alice-secret\";\n"+
			"ssl.truststore.type=PEM\n"+
			"ssl.truststore.certificates="+inlinePEM(c.TLSCAPEM())+"\n"+
			"ssl.endpoint.identification.algorithm=https\n")}},
		{"flags, SCRAM-SHA-512", []string{"--tls-ca", ca, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "alice", "--sasl-password", "alice-secret"}},
		{"flags, PLAIN", []string{"--tls-ca", ca, "--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password", "alice-secret"}},
	} {
		group := "g-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
		rc, stdout, stderr := runOn(t, c, append(tc.args, "--create", "--group", group)...)
		require.Equal(t, 0, rc, "%s: %s%s", tc.name, stdout, stderr)
		assert.Equal(t, "Share group '"+group+"' created.\n", stdout, tc.name)

		rc, stdout, stderr = runOn(t, c, append(tc.args, "--list", "--share")...)
		require.Equal(t, 0, rc, "%s: %s%s", tc.name, stdout, stderr)
		assert.Contains(t, stdout, "\n"+group+" ", tc.name)
		assert.Empty(t, stderr, tc.name)

		rc, stdout, stderr = runOn(t, c, append(tc.args, "--describe", "--group", group)...)
		require.Equal(t, 0, rc, "%s: %s%s", tc.name, stdout, stderr)
		assert.Equal(t, "\nShare group '"+group+"' has no offset information.\n", stdout, tc.name)
		assert.Empty(t, stderr, tc.name)

		rc, stdout, stderr = runOn(t, c, append(tc.args, "--describe", "--group", group, "--members")...)
		require.Equal(t, 0, rc, "%s: %s%s", tc.name, stdout, stderr)
		assert.Empty(t, stdout, tc.name)
		assert.Equal(t, "\nShare group '"+group+"' has no active members.\n", stderr, tc.name)

		rc, stdout, stderr = runOn(t, c, append(tc.args, "--describe", "--group", group, "--state")...)
		require.Equal(t, 0, rc, "%s: %s%s", tc.name, stdout, stderr)
		assert.Regexp(t, "\n"+group+" +127.0.0.1:[0-9]+  \\(0\\) +Empty +0\n$", stdout, tc.name)
	}
}

// TestSecuredClusterRefuses: a wrong password, plain text against the TLS listener, SASL
// missing and a CA the tool does not trust each fail at once with what went wrong.
func TestSecuredClusterRefuses(t *testing.T) {
	t.Parallel()
	c, ca := securedCluster(t)
	wrongPassword := writeFile(t, "wrong.properties", ""+
		"security.protocol=SASL_SSL\n"+
		"sasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"wrong\";\n"+
		"ssl.truststore.type=PEM\n"+
		"ssl.truststore.location="+ca+"\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"wrong password, list", []string{"--command-config", wrongPassword, "--list"}, []string{
			"Error while executing groups command : ",
			"SASL_AUTHENTICATION_FAILED",
			"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		}},
		{"wrong password, describe", []string{"--command-config", wrongPassword, "--describe", "--group", "g"}, []string{
			"Error: Executing share group command failed due to ",
			"SASL_AUTHENTICATION_FAILED",
			"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		}},
		{"wrong password, create", []string{"--command-config", wrongPassword, "--create", "--group", "g"}, []string{
			"Error: ", "SASL_AUTHENTICATION_FAILED",
			"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
		}},
		{"plain text against TLS", []string{"--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password", "alice-secret", "--list"}, []string{
			"Error while executing groups command : ", "is TLS missing?",
		}},
		{"SASL missing", []string{"--tls-ca", ca, "--list"}, []string{
			"Error while executing groups command : ", "is SASL missing?",
		}},
		{"CA not trusted", []string{"--tls", "--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password", "alice-secret", "--list"}, []string{
			"Error while executing groups command : ", "certificate signed by unknown authority",
		}},
	} {
		rc, stdout, _ := runOn(t, c, tc.args...)
		assert.Equal(t, 1, rc, tc.name)
		for _, w := range tc.want {
			assert.Contains(t, stdout, w, tc.name)
		}
	}
}
