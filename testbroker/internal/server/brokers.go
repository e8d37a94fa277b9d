package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// StopBroker stops broker id as a crash or a shutdown would: its listener and every connection
// close (share sessions and parked requests with them), and the replica manager takes its
// replicas out of the ISR and moves its leaderships (replica.Manager.StopBroker), handing the
// share partitions of each moved partition over to the new leader. Groups it coordinated move
// to the next running broker, with their state, as Kafka's coordinator moves with the
// leadership of the __consumer_offsets partition. Metadata no longer lists it. Stopping a
// stopped broker does nothing; the last running broker cannot be stopped.
func (c *Cluster) StopBroker(id int32) error {
	b, unlock, err := c.lockBroker(id, "stopping")
	if err != nil {
		return err
	}
	defer unlock()
	if !c.replicas.Alive(id) {
		return nil
	}
	running := 0
	for _, other := range c.brokers {
		if c.replicas.Alive(other.id) {
			running++
		}
	}
	if running == 1 {
		return fmt.Errorf("stopping broker %d: it is the last one running: %w", id, kerr.BrokerNotAvailable)
	}
	b.close()
	<-b.served
	c.replicas.StopBroker(id)
	return nil
}

// StartBroker starts a stopped broker again on the address it had, with a new broker epoch:
// its replicas catch up from their leaders and rejoin the ISR, and it leads again the
// partitions it was the last in-sync replica of. Starting a running broker does nothing.
func (c *Cluster) StartBroker(id int32) error {
	b, unlock, err := c.lockBroker(id, "starting")
	if err != nil {
		return err
	}
	defer unlock()
	if c.replicas.Alive(id) {
		return nil
	}
	ln, err := c.cfg.Listen(b.addr)
	if err != nil {
		return fmt.Errorf("starting broker %d: %w", id, err)
	}
	b.mu.Lock()
	b.ln, b.closed, b.served = ln, false, make(chan struct{})
	b.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		b.serve()
	}()
	c.replicas.StartBroker(id)
	return nil
}

// lockBroker returns broker id with the lifecycle lock held (unlock releases it), or an error
// naming what was being done for an unknown broker or a closed cluster.
func (c *Cluster) lockBroker(id int32, doing string) (b *Broker, unlock func(), err error) {
	if b = c.broker(id); b == nil {
		return nil, nil, fmt.Errorf("%s broker %d: no such broker: %w", doing, id, kerr.BrokerNotAvailable)
	}
	c.lifecycleMu.Lock()
	select {
	case <-c.closed:
		c.lifecycleMu.Unlock()
		return nil, nil, errClusterClosed
	default:
	}
	return b, c.lifecycleMu.Unlock, nil
}

// alive reports whether broker id runs.
func (c *Cluster) alive(id int32) bool { return c.replicas.Alive(id) }
