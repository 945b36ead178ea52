package launcher

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	flag "github.com/spf13/pflag"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/runpod"
)

// parseOpen parses a catalog command's flags and opens the API.
func (a *app) parseOpen(ctx context.Context, fs *flag.FlagSet, args []string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s takes no arguments", strings.TrimPrefix(fs.Name(), "launch "))
	}
	return a.open(ctx)
}

// table prints rows under head, aligned, or one line when there are none.
func (a *app) table(empty, head string, rows [][]any) {
	if len(rows) == 0 {
		fmt.Fprintln(a.stdout, empty)
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		fmt.Fprintf(tw, strings.TrimSuffix(strings.Repeat("%v\t", len(r)), "\t")+"\n", r...)
	}
	tw.Flush()
}

func cmdGPUs(ctx context.Context, a *app, args []string) error {
	f, cloud, dc := guard.GPUFilter{}, "", ""
	fs := a.newFlags("gpus", "", "Lists the GPU types of the catalog with their price and live stock, cheapest first.")
	fs.IntVar(&f.MinVRAMGB, "min-vram", 0, "at least this many GB of VRAM")
	fs.Float64Var(&f.MaxPricePerGPU, "max-price", 0, "at most this USD/h per GPU")
	fs.BoolVar(&f.InStock, "in-stock", false, "only the types in stock")
	fs.StringVar(&dc, "data-center", "", "only the types in stock in these data centers 'A,B'")
	fs.StringVar(&cloud, "cloud", "SECURE", "SECURE or COMMUNITY")
	fs.IntVar(&f.Count, "count", 1, "GPUs per pod")
	if err := a.parseOpen(ctx, fs, args); err != nil {
		return err
	}
	f.Cloud, f.DataCenters, f.InStock = runpod.CloudType(cloud), splitList(dc), f.InStock || dc != ""
	types, err := guard.ListGPUs(ctx, a.api, f)
	if err != nil {
		return err
	}
	var rows [][]any
	for _, g := range types {
		price, _ := g.PricePerHour(f.Cloud, 1)
		rows = append(rows, []any{g.ID, fmt.Sprintf("%d GB", g.MemoryGB), money(price), g.MaxCount(f.Cloud), g.Availability})
	}
	a.table("no GPU type matches "+f.String(), "ID\tVRAM\t$/H\tMAX COUNT\tSTOCK", rows)
	return nil
}

func cmdDataCenters(ctx context.Context, a *app, args []string) error {
	if err := a.parseOpen(ctx, a.newFlags("datacenters", "", "Lists the data centers with the GPU types they have in stock."), args); err != nil {
		return err
	}
	dcs, err := a.api.ListDataCenters(ctx, true)
	if err != nil {
		return err
	}
	var rows [][]any
	for _, d := range dcs {
		rows = append(rows, []any{d.ID, d.Region, dash(strings.Join(d.InStock(), ", "))})
	}
	a.table("no data centers", "ID\tREGION\tGPU TYPES IN STOCK", rows)
	return nil
}

func cmdVolumes(ctx context.Context, a *app, args []string) error {
	size, dc := 0, ""
	fs := a.newFlags("volumes", "[create NAME]", "Lists the network volumes, or creates one (it bills every month until deleted).")
	fs.IntVar(&size, "size", 0, "create: size in GB")
	fs.StringVar(&dc, "data-center", "", "create: data center id")
	if err := parse(fs, args); err != nil {
		return err
	}
	sub, name := fs.Arg(0), fs.Arg(1)
	if fs.NArg() > 2 || (sub != "" && (sub != "create" || name == "")) {
		return usagef("volumes takes no arguments, or create NAME --size GB --data-center ID")
	}
	if err := a.open(ctx); err != nil {
		return err
	}
	if name != "" {
		v, err := a.api.CreateNetworkVolume(ctx, name, size, dc)
		if err != nil {
			return err
		}
		a.say("network volume %s (%s) created: %d GB in %s", v.ID, v.Name, v.SizeGB, v.DataCenterID)
		return nil
	}
	vols, err := a.api.ListNetworkVolumes(ctx)
	if err != nil {
		return err
	}
	var rows [][]any
	for _, v := range vols {
		rows = append(rows, []any{v.ID, v.Name, fmt.Sprintf("%d GB", v.SizeGB), v.DataCenterID})
	}
	a.table("no network volumes", "ID\tNAME\tSIZE\tDATA CENTER", rows)
	return nil
}

func cmdRegistries(ctx context.Context, a *app, args []string) error {
	if err := a.parseOpen(ctx, a.newFlags("registries", "", "Lists the account's container registry credentials: the id of one, given to\nrun --registry-auth, lets Runpod pull a private image (make them in Runpod's\nconsole; their usernames and passwords are never shown)."), args); err != nil {
		return err
	}
	regs, err := a.api.ListRegistries(ctx)
	if err != nil {
		return err
	}
	var rows [][]any
	for _, r := range regs {
		rows = append(rows, []any{dash(r.ID), dash(r.Name)})
	}
	a.table("no registry credentials", "ID\tNAME", rows)
	return nil
}

// checkGPUFlag refuses a --gpu id that the catalog does not have, with a
// few that it has: the create would only be refused. A catalog that
// cannot be read checks nothing (the create will say).
func (a *app) checkGPUFlag(ctx context.Context, ids []string) error {
	if len(ids) == 1 && ids[0] == guard.AutoGPU {
		return nil
	}
	types, err := a.api.ListGPUTypes(ctx)
	if err != nil {
		return nil
	}
	known := make([]string, 0, len(types))
	for _, g := range types {
		known = append(known, g.ID)
	}
	for _, id := range ids {
		if !slices.Contains(known, id) {
			return usagef("--gpu %q is not a GPU type id of the catalog; some that are: %s (\"launch gpus\" lists them all)",
				id, strings.Join(likeGPU(id, known, 5), ", "))
		}
	}
	return nil
}

// likeGPU is the n ids of known that share the most words with id.
func likeGPU(id string, known []string, n int) []string {
	words := strings.Fields(strings.ToLower(id))
	shared := func(k string) int {
		c := 0
		for _, w := range strings.Fields(strings.ToLower(k)) {
			if slices.Contains(words, w) {
				c++
			}
		}
		return c
	}
	like := slices.Clone(known)
	slices.SortStableFunc(like, func(x, y string) int { return cmp.Compare(shared(y), shared(x)) })
	return like[:min(n, len(like))]
}
