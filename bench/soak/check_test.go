package main

import "testing"

// TestCheckTop: only the thread table's shares count; the files table's
// inode numbers and byte counts do not.
func TestCheckTop(t *testing.T) {
	out := `whyslow top  04:27:54  every 1s  sort LOST  threads
dirty 12.4 MiB  writeback 0 B

    PID COMM          LOST   CPU  RUNQ  READ WRITE DIRTY  SYNC   NET  LOCK   IPC SLEEP CHILD OTHER MOSTLY         WAITING ON
  16869 memfd:seale…   0.0   0.0   0.0     0     0     0     0     0    99     0     0     0     0 lock
     15 rcu_preempt    0.0 104.5   0.0     0     0     0     0     0     0     0     0     0   100 other
    901 [pid 901]      0.0   1.0   0.0     0     0     0     0     0     0     0     0     0    99 other

DEVICE         r/s     w/s   rMB/s   wMB/s  r_await  w_await  %util
vda          200.7     0.0    0.01    0.00   0.2 ms        -    0.0

   WAITED  READ/s WRITE/s DIRTY/s DISKR/s DISKW/s FILE
        0       0       0       0   13.3K       0 inode 409622 on 254:0
`
	frames, over, unnamed, unnamedFiles := checkTop(out)
	if frames != 1 || len(over) != 1 || unnamed != 1 || unnamedFiles != 1 {
		t.Errorf("frames %d, over 100%%: %q, unnamed %d, files by inode %d; want 1, the rcu_preempt row, 1, 1",
			frames, over, unnamed, unnamedFiles)
	}
}
