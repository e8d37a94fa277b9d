package shareconsumer_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/acktype"
	"github.com/kshare/kshare/shareconsumer"
	"github.com/kshare/kshare/testbroker"
)

// A consumer of a secured cluster gets its TLS and SASL settings through ClientOpts, as any
// kgo client does: here TLS that trusts the cluster's certificate authority, and SCRAM-SHA-256.
// The producer uses the same two options.
func Example_securedCluster() {
	c := testbroker.MustStart(
		testbroker.Topic("payments", 1),
		testbroker.GeneratedTLS(),
		testbroker.SASL("SCRAM-SHA-256"),
		testbroker.User("payments-app", "s3cret"),
	)
	defer c.Close()
	if err := c.SetGroupConfig("payment-workers", "share.auto.offset.reset", "earliest"); err != nil {
		panic(err)
	}

	// A real cluster's CA comes from a PEM file: x509.NewCertPool and AppendCertsFromPEM.
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: c.TLSCA()}
	security := []kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.DialTLSConfig(tlsConfig),
		kgo.SASL(scram.Auth{User: "payments-app", Pass: "s3cret"}.AsSha256Mechanism()),
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(append(security, kgo.DefaultProduceTopic("payments"))...)
	if err != nil {
		panic(err)
	}
	defer producer.Close()
	for _, v := range []string{"payment-1", "payment-2", "payment-3"} {
		if err := producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			panic(err)
		}
	}

	consumer, err := shareconsumer.New(
		shareconsumer.ClientOpts(security...),
		shareconsumer.Group("payment-workers"),
		shareconsumer.Topics("payments"),
		shareconsumer.ExplicitAcknowledgement(),
	)
	if err != nil {
		panic(err)
	}
	defer consumer.Close(context.Background())

	for done := 0; done < 3; {
		recs, err := consumer.Poll(ctx)
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			if err := consumer.Acknowledge(r, acktype.Accept); err != nil {
				panic(err)
			}
			fmt.Printf("%s accepted\n", r.Value)
			done++
		}
	}
	if _, err := consumer.CommitSync(ctx); err != nil {
		panic(err)
	}
	// Output:
	// payment-1 accepted
	// payment-2 accepted
	// payment-3 accepted
}
