// Command kshare-groups lists the groups of a cluster the way Kafka's kafka-groups.sh does, creates
// share groups (which Kafka's tools cannot: the draft of KIP-1043 had --create, the shipped KIP
// dropped it) and describes groups the way kafka-share-groups.sh --describe does for a share
// group and kafka-consumer-groups.sh --describe for a consumer or classic group (describe.go):
//
//	kshare-groups --list
//	kshare-groups --list --share
//	kshare-groups --list --group-type classic --protocol connect
//	kshare-groups --create --group workers
//	kshare-groups --describe --group demo-share
//	kshare-groups --describe --all-groups --members --verbose
//	kshare-groups --list --state
//	kshare-groups --list --type --state
//	kshare-groups --bootstrap-server 127.0.0.1:9092 --list --consumer
//	kshare-groups --bootstrap-server kafka:9093 --command-config client.properties --list
//	kshare-groups --bootstrap-server kafka:9093 --tls-ca ca.pem --sasl-mechanism SCRAM-SHA-512 --sasl-username u --sasl-password p --list
//
// It also resets offsets, deletes offsets and deletes groups of every type the way Kafka's tool
// for the group's type does (kafka-share-groups.sh, or kafka-consumer-groups.sh for consumer
// and classic groups): see reset.go, deleteoffsets.go and delete.go.
//
//	kshare-groups --reset-offsets --group workers --topic orders --to-earliest --execute
//	kshare-groups --reset-offsets --group app --all-topics --shift-by -10 --dry-run
//	kshare-groups --reset-offsets --all-groups --all-topics --to-latest --execute
//	kshare-groups --delete-offsets --group workers --topic orders
//	kshare-groups --delete --all-groups
//
// Without --bootstrap-server it starts an embedded testbroker with one demo group of each type
// it supports (see seedDemoGroups). Option errors and their messages are kafka-groups.sh's and,
// for --describe and --list with --state or --type, those of kafka-share-groups.sh and
// kafka-consumer-groups.sh (checkargs.go), as are those of --reset-offsets, --delete-offsets
// and --delete (resetargs.go).
//
// A secured cluster is reached with --command-config, a file of Kafka's client properties
// (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.* and ssl.keystore.* in
// PEM, ssl.endpoint.identification.algorithm: see securityFromProperties), or with the shortcut
// flags --tls, --tls-ca, --tls-cert, --tls-key, --sasl-mechanism, --sasl-username and
// --sasl-password (see securityFromFlags). Every client the tool makes connects through one connection.
package main

import (
	"context"
	stderrors "errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	// No overall deadline: --timeout bounds each request, as in Kafka's tools; an interrupt
	// ends the run.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Stdout, os.Stderr, os.Args[1:])
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	bootstrapServer string
	list            bool
	create          bool
	describe        bool
	group           string
	groupType       string // lower case, one of groupTypes; "" when not given
	protocol        *string
	consumer        bool
	share           bool
	streams         bool
	connection      connectionFlags

	groups        []string // every --group, in order (group is the last)
	allGroups     bool
	members       bool
	offsets       bool
	state         optionalArg
	typ           optionalArg // --type
	verbose       bool
	timeoutMs     int64
	offsetActions // --reset-offsets, --delete-offsets, --delete: resetargs.go

	given map[string]bool // the options on the command line, with or without a value
}

// groupTypes are the types --group-type takes, as Kafka's GroupType parses them (case
// insensitively).
var groupTypes = []string{"classic", "consumer", "share", "streams"}

// usageError is a command line Kafka's tools refuse with a message followed by the usage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("kshare-groups", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.bootstrapServer, "bootstrap-server", "", "The Kafka server to connect to; without it, an embedded testbroker with demo groups.")
	fs.BoolVar(&o.list, "list", false, "List the groups.")
	fs.BoolVar(&o.create, "create", false, "Create the share group given by --group (beyond Kafka's tools).")
	fs.BoolVar(&o.describe, "describe", false, "Describe the groups given by --group or --all-groups: members, offset information and lag, or state.")
	fs.Var(groupsFlag{&o.group, &o.groups}, "group", "The group; --describe and --delete take several, --reset-offsets several consumer or classic groups, --create and --delete-offsets one.")
	fs.String("group-type", "", "Filter the groups based on group type. Valid types are: 'classic', 'consumer', 'share' and 'streams'.")
	fs.String("protocol", "", "Filter the groups based on protocol type.")
	fs.BoolVar(&o.consumer, "consumer", false, "Filter the groups to show all kinds of consumer groups, including classic and simple consumer groups. "+
		"This matches group type 'consumer', and group type 'classic' where the protocol type is 'consumer' or empty.")
	fs.BoolVar(&o.share, "share", false, "Filter the groups to show share groups.")
	fs.BoolVar(&o.streams, "streams", false, "Filter the groups to show streams groups.")
	fs.StringVar(&o.connection.commandConfig, "command-config", "", "A file of Kafka client properties (Java properties format) to connect with: security.protocol, "+
		"sasl.mechanism, sasl.jaas.config, ssl.truststore.type (PEM), ssl.truststore.location or ssl.truststore.certificates, "+
		"ssl.endpoint.identification.algorithm, ssl.keystore.type (PEM), ssl.keystore.location or ssl.keystore.key with "+
		"ssl.keystore.certificate.chain, ssl.key.password. Other properties are not used (a warning names them); JKS and PKCS12 key "+
		"stores and callback handler classes are refused.")
	fs.BoolVar(&o.connection.tls, "tls", false, "Connect with TLS, trusting the system's CAs (beyond Kafka's tools; overrides --command-config).")
	fs.StringVar(&o.connection.tlsCA, "tls-ca", "", "Connect with TLS, trusting the CA certificates of this PEM file (beyond Kafka's tools).")

	fs.StringVar(&o.connection.tlsCert, "tls-cert", "", "Connect with TLS, presenting the client certificate (chain) of this PEM file, with --tls-key (beyond Kafka's tools; overrides --command-config).")
	fs.StringVar(&o.connection.tlsKey, "tls-key", "", "The unencrypted PKCS#8 private key (BEGIN PRIVATE KEY) of --tls-cert, in PEM.")

	fs.StringVar(&o.connection.saslMechanism, "sasl-mechanism", "", "Authenticate with SASL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER "+
		"(an unsecured token whose sub is --sasl-username) (beyond Kafka's tools; overrides --command-config).")
	fs.StringVar(&o.connection.saslUsername, "sasl-username", "", "The SASL user, with --sasl-mechanism.")
	fs.StringVar(&o.connection.saslPassword, "sasl-password", "", "The SASL password, with --sasl-mechanism.")

	fs.BoolVar(&o.allGroups, "all-groups", false, "Apply to all share, consumer and classic groups; with --reset-offsets, to all consumer and classic groups (as kafka-consumer-groups.sh).")
	fs.BoolVar(&o.members, "members", false, "Describe members of the group. This option may be used with the --describe option only.")
	fs.BoolVar(&o.offsets, "offsets", false, "Describe the group and list all topic partitions in the group along with their offset information. "+
		"This is the default sub-action and may be used with the --describe option only.")
	fs.Var(&o.state, "state", "When specified with --describe, it displays the state of the group. When specified with --list, it displays "+
		"the state of all share groups (with --consumer or --type, of consumer groups). It can also be used to list groups with specific states.")
	fs.Var(&o.typ, "type", "When specified with --list, it displays the types of all the consumer groups. It can also be used to list "+
		"groups with specific types. Valid types are: 'classic', 'consumer'.")
	fs.BoolVar(&o.verbose, "verbose", false, "Provide additional information, if any, when describing the group. This option may be used "+
		"with the --describe option only.")
	fs.Int64Var(&o.timeoutMs, "timeout", defaultTimeoutMs, "The timeout in milliseconds of each request to the cluster.")
	addOffsetActionFlags(fs, &o.offsetActions)
	return fs
}

// usage is the option list printed after a usage error.
func usage() string {
	var b strings.Builder
	fs := newFlagSet(&options{})
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

// usageFailure writes msg and the usage on stderr, as Kafka's printUsageAndExit, and returns
// its exit code.
func usageFailure(stderr io.Writer, msg string) int {
	fmt.Fprintln(stderr, msg)
	fmt.Fprint(stderr, usage())
	return 1
}

// badValue is the error of Go's flag package for a value its flag cannot parse (a number).
var badValue = regexp.MustCompile(`^invalid value ("(?:[^"\\]|\\.)*") for flag -(\S+): `)

// parseArgs checks the command line as kafka-groups.sh does, in its order: something given, one
// action, a valid --group-type, then --consumer, --share and --streams each alone among the
// filters. --create and --describe take no filter; --list takes no --group. Then come the
// checks of the share and consumer tools (checkDescribeListArgs: --describe, --list with
// --state or --type, and the offset actions) and --create's need of --group.
func parseArgs(args []string) (options, error) {
	var o options
	fs := newFlagSet(&o)
	if len(args) == 0 {
		return o, usageError{"This tool helps to list groups of all types, create share groups, describe them, reset and delete their offsets, and delete them."}
	}
	if err := fs.Parse(joinOptionalArgs(args)); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
			return o, usageError{strings.TrimLeft(name, "-") + " is not a recognized option"}
		}
		if m := badValue.FindStringSubmatch(err.Error()); m != nil {
			if v, uerr := strconv.Unquote(m[1]); uerr == nil {
				// joptsimple's OptionArgumentConversionException.
				return o, usageError{"Cannot parse argument '" + v + "' of option [" + m[2] + "]"}
			}
		}
		if stderrors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return o, usageError{"Found non-option arguments: " + strings.Join(fs.Args(), " ")}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.given = given
	if err := checkAvailable(given); err != nil {
		return o, err
	}
	if n := count(given, "list", "describe", "delete", "reset-offsets", "delete-offsets", "create"); n != 1 {
		return o, usageError{"Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets, --create."}
	}
	if given["group-type"] {
		t := strings.ToLower(fs.Lookup("group-type").Value.String())
		if !slices.Contains(groupTypes, t) {
			return o, stderrors.New("--group-type must be a valid group type.")
		}
		o.groupType = t
	}
	if given["protocol"] {
		p := fs.Lookup("protocol").Value.String()
		o.protocol = &p
	}
	for _, rule := range [][]string{
		{"consumer", "group-type", "protocol", "share", "streams"},
		{"share", "consumer", "group-type", "protocol", "streams"},
		{"streams", "consumer", "group-type", "protocol", "share"},
		{"list", "group"},
		{"create", "group-type", "protocol", "consumer", "share", "streams"},
		{"describe", "group-type", "protocol", "consumer", "share", "streams"},
	} {
		if err := checkInvalidArgs(given, rule[0], rule[1:]...); err != nil {
			return o, err
		}
	}
	if err := checkDescribeListArgs(o); err != nil {
		return o, err
	}
	if o.create && !given["group"] {
		return o, usageError{`Missing required argument "[group]"`}
	}
	if o.connection.given() && o.bootstrapServer == "" {
		return o, stderrors.New("--command-config, --tls* and --sasl-* need --bootstrap-server: the embedded testbroker runs without security")
	}
	return o, nil
}

// checkInvalidArgs refuses used together with any of invalid, in the words of Kafka's
// CommandLineUtils.checkInvalidArgs (joptsimple names an option "[name]").
func checkInvalidArgs(given map[string]bool, used string, invalid ...string) error {
	if !given[used] {
		return nil
	}
	for _, o := range invalid {
		if given[o] {
			return usageError{fmt.Sprintf(`Option "[%s]" can't be used with option "[%s]"`, used, o)}
		}
	}
	return nil
}

func count(given map[string]bool, names ...string) int {
	n := 0
	for _, name := range names {
		if given[name] {
			n++
		}
	}
	return n
}

// run runs the command line args, writing what Kafka's tools write to stdout to stdout and the
// rest to stderr, and returns the exit code.
func run(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	o, err := parseArgs(args)
	var ue usageError
	switch {
	case stderrors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, usage())
		return 0
	case stderrors.As(err, &ue):
		return usageFailure(stderr, ue.msg)
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 1
	}
	conn, err := newConnection(o.bootstrapServer, o.connection, func(msg string) { fmt.Fprintln(stderr, msg) })
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if o.bootstrapServer == "" {
		addrs, stop, err := startDemo(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "starting the embedded testbroker with demo groups:", err)
			return 1
		}
		defer stop()
		conn.seeds = addrs
		fmt.Fprintf(stderr, "started an embedded testbroker with demo groups: %s\n", strings.Join(addrs, ","))
	}
	cl, err := kgo.NewClient(conn.opts()...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer cl.Close()
	// A first request that fails to connect or authenticate fails the action at once, with
	// the broker's error code and message (kgo keeps the message here but not on the way to a
	// group coordinator).
	pingCtx, cancel := o.requestCtx(ctx)
	err = cl.Ping(pingCtx)
	cancel()
	if err != nil {
		return failAction(stdout, stderr, o, o.timedOut(err))
	}
	switch {
	case o.list && o.listing() != kafkaGroupsListing:
		return listGroupStates(ctx, stdout, stderr, kadm.NewClient(cl), o)
	case o.list:
		if err := listGroups(ctx, stdout, kadm.NewClient(cl), o, groupFilter{o.groupType, o.protocol, o.consumer, o.share, o.streams}); err != nil {
			return failAction(stdout, stderr, o, err)
		}
	case o.create:
		if !createGroup(ctx, stdout, conn, o) {
			return 1
		}
	case o.describe:
		return describeGroups(ctx, stdout, stderr, cl, o)
	case o.resetOffsets:
		return resetOffsets(ctx, stdout, stderr, cl, o)
	case o.deleteOffsets:
		return deleteOffsets(ctx, stdout, stderr, cl, o)
	case o.deleteGroups:
		return deleteGroups(ctx, stdout, stderr, cl, o)
	}
	return 0
}

// failAction writes err, which ended the action before it knew a group's type, as the
// action's Kafka tool writes an error it did not expect, and returns the exit code.
func failAction(stdout, stderr io.Writer, o options, err error) int {
	switch {
	case o.list && o.listing() != kafkaGroupsListing:
		return o.listing().tool().fail(stdout, stderr, thrown(err))
	case o.list:
		fmt.Fprintln(stdout, "Error while executing groups command : "+err.Error())
	case o.create:
		fmt.Fprintf(stdout, "Error: %v\n", err)
	case o.describe:
		return shareTool.fail(stdout, stderr, thrown(err))
	default: // --reset-offsets, --delete-offsets, --delete
		return unlistedTool(o.consumerOnly()).fail(stdout, stderr, javaError{msg: err.Error()})
	}
	return 1
}
