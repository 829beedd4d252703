package idcore

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns a Prometheus collector for the generator's counters and state. Register it
// on the registerer of the process (the service's or the embedding application's); the counters
// are kept by the generator itself, so issuing an ID costs no metric update.
func (g *Generator) Collector() prometheus.Collector { return (*collector)(g) }

var (
	descIssued = prometheus.NewDesc("idgen_generator_ids_issued_total",
		"IDs issued by this generator.", nil, nil)
	descRefusals = prometheus.NewDesc("idgen_generator_refusals_total",
		"Requests for an ID refused, by reason.", []string{"reason"}, nil)
	descWaits = prometheus.NewDesc("idgen_generator_waits_total",
		"Waits before an ID could be issued, by cause (back_step, sequence, floor).", []string{"cause"}, nil)
	descMachine = prometheus.NewDesc("idgen_generator_machine_number",
		"Machine number held per layout; -1 when none is held.", []string{"layout"}, nil)
	descFence = prometheus.NewDesc("idgen_generator_fence_remaining_seconds",
		"Time left before the lease fence per layout (negative once past it).", []string{"layout"}, nil)
	descClockHealthy = prometheus.NewDesc("idgen_clock_healthy",
		"1 when the last clock check found the clock synchronized and within the error limit.", nil, nil)
	descClockError = prometheus.NewDesc("idgen_clock_estimated_error_seconds",
		"The kernel's estimated clock error at the last check.", nil, nil)
	descClockWarn = prometheus.NewDesc("idgen_clock_check_warn_mode",
		"1 when the clock check is in warn mode (development only: IDs are issued on an unhealthy clock).", nil, nil)
)

type collector Generator

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIssued, descRefusals, descWaits, descMachine, descFence,
		descClockHealthy, descClockError, descClockWarn} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	g := (*Generator)(c)
	for i, r := range refusals {
		ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.CounterValue, float64(g.refused[i].Load()), r.reason)
	}
	now := g.clock.Now().UnixMilli() - EpochUnixMs
	g.mu.Lock()
	ch <- prometheus.MustNewConstMetric(descIssued, prometheus.CounterValue, float64(g.issued))
	for i, n := range g.waits {
		ch <- prometheus.MustNewConstMetric(descWaits, prometheus.CounterValue, float64(n), waitCauseNames[i])
	}
	for i, p := range g.sched.periods {
		s := g.slots[i]
		machine, fence := -1.0, 0.0
		if s.held {
			machine, fence = float64(s.machine), float64(s.fence-now)/1000
		}
		ch <- prometheus.MustNewConstMetric(descMachine, prometheus.GaugeValue, machine, p.Layout.name)
		ch <- prometheus.MustNewConstMetric(descFence, prometheus.GaugeValue, fence, p.Layout.name)
	}
	g.mu.Unlock()
	st := g.ClockStatus()
	ch <- prometheus.MustNewConstMetric(descClockHealthy, prometheus.GaugeValue, b2f(st.Healthy))
	ch <- prometheus.MustNewConstMetric(descClockError, prometheus.GaugeValue, st.EstimatedError.Seconds())
	ch <- prometheus.MustNewConstMetric(descClockWarn, prometheus.GaugeValue, b2f(g.mode == ClockWarn))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
