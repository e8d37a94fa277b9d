// Package memnet is an in-memory stand-in for TCP: listeners and connections built only of
// mutexes, condition variables and timers, with no OS socket anywhere. testing/synctest counts a
// goroutine waiting in them as durably blocked, which it never does for a goroutine waiting on a
// real socket, so a bubble can hold a fake cluster and its clients and still move its fake clock.
//
// A Network maps host:port addresses to Listeners; the hosts are names only the Network knows and
// need not resolve. A connection is two one-way buffers, one per direction: a Write returns once
// its bytes are buffered and waits only while the buffer is full, so the two sides do not move in
// lock step as they do on a net.Pipe. Deadlines, Close and the errors of both follow net.TCPConn.
package memnet
