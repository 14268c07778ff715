package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// cpuTimes is a process's CPU use in seconds: its own, and that of its children it waited for
// (the controller's git upload-pack/receive-pack processes).
type cpuTimes struct {
	Self, Children float64
}

func (c cpuTimes) total() float64 { return c.Self + c.Children }

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{Self: c.Self - o.Self, Children: c.Children - o.Children}
}

// procStat reads /proc/PID/stat: parent pid, command name and CPU times.
func procStat(pid int) (ppid int, comm string, cpu cpuTimes, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", cpu, err
	}
	// comm is in parentheses and may contain spaces: split after the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return 0, "", cpu, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	comm = string(b[open+1 : end])
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return 0, "", cpu, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var t [4]float64
	for i := range t {
		v, err := strconv.ParseUint(f[11+i], 10, 64)
		if err != nil {
			return 0, "", cpu, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		t[i] = float64(v) / clockTicks
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, comm, cpuTimes{Self: t[0] + t[1], Children: t[2] + t[3]}, err
}

// peakRSS is VmHWM of a running process, in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// childPIDs are the bench's child processes named one of names.
func childPIDs(names ...string) map[int]bool {
	pids := map[int]bool{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		ppid, comm, _, err := procStat(pid)
		if err != nil || ppid != self {
			continue
		}
		if slices.Contains(names, comm) {
			pids[pid] = true
		}
	}
	return pids
}

// pidsCPU sums the CPU of the processes pids that still run.
func pidsCPU(pids map[int]bool) cpuTimes {
	var sum cpuTimes
	for pid := range pids {
		if _, _, cpu, err := procStat(pid); err == nil {
			sum.Self += cpu.Self
			sum.Children += cpu.Children
		}
	}
	return sum
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}

// parallel runs f(0..n-1) on GOMAXPROCS workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	return parallelN(n, runtime.GOMAXPROCS(0), f)
}

// parallelN runs f(0..n-1) on the given number of workers and returns the first error; after an
// error no new calls start.
func parallelN(n, workers int, f func(i int) error) error {
	var (
		next    atomic.Int64
		failed  atomic.Bool
		errOnce sync.Once
		first   error
		wg      sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || failed.Load() {
					return
				}
				if err := f(i); err != nil {
					failed.Store(true)
					errOnce.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
