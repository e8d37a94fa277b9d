package kshareprom

import "github.com/kshare/kshare/shareconsumer"

// heldOf returns the records c holds now.
//
// Until Status has Held (branch hooks), this is Process's figure only.
func heldOf(c *shareconsumer.Consumer) int { return c.ProcessStats().Held }
