// SPDX-License-Identifier: MIT
/* `plugdisk explore`'s report: for each failing state the barrier it follows, the writes it
 * kept, dropped and tore, the marks, the checker's output and a command that rebuilds it; as
 * text, or as JSON for CI. Failures are listed by state id, whatever order they ended in. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/exit.h"
#include "daemon/explore/explore.h"

#define XP_LIST_MAX 64	/* ranges listed per kind; the counts are always whole */

static void put_shell_word(FILE *f, const char *s)
{
	if (*s && !s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			       "_-./=:,+@%")]) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

static void put_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* "after flush 3 (epoch 4)" and the like. */
static void put_barrier(FILE *f, const struct ws_window *w)
{
	switch (w->kind) {
	case WS_START:
		fprintf(f, "the log's start");
		break;
	case WS_FLUSH:
		fprintf(f, "flush %" PRIu64 " (epoch %" PRIu64 ")", w->flush_no, w->epoch);
		break;
	case WS_IGNORED:
		fprintf(f, "flush %" PRIu64 " (epoch %" PRIu64 ", ignored: nothing made durable)",
			w->flush_no, w->epoch);
		break;
	case WS_DISCARD:
		fprintf(f, "a discard after flush %" PRIu64, w->flush_no);
		break;
	}
}

/* The command that writes the state's image. */
static void put_rebuild(FILE *f, const struct xp *x, uint64_t id)
{
	char img[64];

	snprintf(img, sizeof(img), "state-%" PRIu64 ".img", id);
	fprintf(f, "plugdisk explore -k %u --state %" PRIu64 " --image %s ", x->k, id, img);
	put_shell_word(f, x->log_path);
	fputc(' ', f);
	put_shell_word(f, x->base_path);
}

/* What @op's range belongs to in window @win's image: ,"owner":"..." or "OWNER" in text. */
static void put_owner(FILE *f, const struct xp *x, uint64_t win, const struct ws_op *op,
		      bool json)
{
	const char *o;

	if (!x->owner || !x->owners_shown)
		return;
	o = xp_owner_name(x->owner, win, op->off, op->len);
	if (!o)
		o = "offsets only";
	if (json) {
		fputs(",\"owner\":", f);
		put_json_str(f, o);
	} else {
		fprintf(f, " \"%s\"", o);
	}
}

/* Ranges of the pending ops the state keeps as @want (0 dropped, 1 kept, 2 torn). */
static uint64_t put_ranges(FILE *f, const struct xp *x, const struct ws_state *s, int want,
			   bool json)
{
	const struct ws_log *l = &x->log;
	const struct ws_window *w = &l->win[s->win];
	uint64_t cnt = 0;

	for (uint64_t i = 0; i < s->n; i++) {
		const struct ws_op *op = &l->ops[w->durable + i];

		if (ws_state_keeps(l, s, i) != want)
			continue;
		if (cnt++ >= XP_LIST_MAX)
			continue;
		if (json) {
			fprintf(f, "%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 "%s", cnt > 1 ? "," : "",
				op->off, op->len, op->data ? "" : ",\"discard\":true");
		} else {
			fprintf(f, " %" PRIu64 "+%" PRIu64 "%s", op->off, op->len,
				op->data ? "" : "(discard)");
		}
		put_owner(f, x, s->win, op, json);
		if (want == 2) {
			uint64_t o, n;

			ws_state_torn_range(l, s, &o, &n);
			if (json)
				fprintf(f, ",\"kept_offset\":%" PRIu64 ",\"kept_length\":%" PRIu64, o, n);
			else
				fprintf(f, "(kept %" PRIu64 "+%" PRIu64 ")", o, n);
		}
		if (json)
			fputc('}', f);
	}
	if (!json && cnt > XP_LIST_MAX)
		fprintf(f, " ... and %" PRIu64 " more", cnt - XP_LIST_MAX);
	return cnt;
}

/* --minimize's culprit: "fails when only these are lost" and its entries, or why none. */
static void put_culprit_text(FILE *f, const struct xp *x, const struct ws_state *s,
			     const struct xp_culprit *c)
{
	const struct ws_window *w = &x->log.win[s->win];

	if (c->no_loss) {
		fprintf(f, "  culprit: none: it fails with every write of its window kept, so the "
			"cause is not a lost write (%" PRIu64 " checker runs)\n", c->runs);
		return;
	}
	fprintf(f, "  fails when only these are lost (%" PRIu64 "):", c->n);
	/* As the kept and dropped lines: the owner in quotes, since owners such as "[journal]"
	 * carry their own brackets. */
	for (uint64_t i = 0; i < c->n; i++) {
		const struct ws_op *op = &x->log.ops[w->durable + c->ops[i]];

		fprintf(f, " %" PRIu64 "+%" PRIu64, op->off, op->len);
		put_owner(f, x, s->win, op, false);
	}
	fprintf(f, "\n    (%s, %" PRIu64 " checker runs)\n", c->minimal ? "minimal" :
		"not shown minimal: the --minimize-budget ran out", c->runs);
}

static void put_culprit_json(FILE *f, const struct xp *x, const struct ws_state *s,
			     const struct xp_culprit *c)
{
	const struct ws_window *w = &x->log.win[s->win];

	fprintf(f, ",\"culprit\":[");
	for (uint64_t i = 0; i < c->n; i++) {
		const struct ws_op *op = &x->log.ops[w->durable + c->ops[i]];
		char *owner = xp_write_owner(x, s->win, op);

		fprintf(f, "%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"owner\":",
			i ? "," : "", op->off, op->len);
		put_json_str(f, owner ? owner : "");
		fputc('}', f);
		free(owner);
	}
	fprintf(f, "],\"culprit_minimal\":%s,\"culprit_no_loss\":%s,\"minimize_runs\":%" PRIu64,
		c->minimal ? "true" : "false", c->no_loss ? "true" : "false", c->runs);
}

static uint64_t count_keeps(const struct xp *x, const struct ws_state *s, int want)
{
	uint64_t cnt = 0;

	for (uint64_t i = 0; i < s->n; i++)
		cnt += ws_state_keeps(&x->log, s, i) == want;
	return cnt;
}

static void put_kind(FILE *f, const struct ws_state *s)
{
	switch (s->kind) {
	case WS_K_FLUSH:
		fprintf(f, "the barrier's state: every pending write lost");
		break;
	case WS_K_PREFIX:
		fprintf(f, "the first %" PRIu64 " of %" PRIu64 " pending writes", s->j, s->n);
		break;
	case WS_K_SUBSET:
		fprintf(f, "a subset of %" PRIu64 " pending writes", s->n);
		break;
	case WS_K_DROP:
		fprintf(f, "%" PRIu64 " pending writes but %u", s->n, s->ndrop);
		break;
	case WS_K_OVER:
		fprintf(f, "the first %" PRIu64 " of the %" PRIu64 " pending writes that no later"
			" write of their epoch overwrote, the overwritten ones lost", s->j, s->n);
		break;
	case WS_K_TORN:
		fprintf(f, "pending write %" PRIu64 " of %" PRIu64 " torn (its %s %" PRIu64
			" units kept), the ones before it kept, the rest lost", s->j + 1, s->n,
			s->tail ? "last" : "first", s->m);
		break;
	}
}

void xp_put_state_json(FILE *f, const struct xp *x, const struct ws_state *s)
{
	const struct ws_log *l = &x->log;
	const struct ws_window *w = &l->win[s->win];
	uint64_t nacked;
	int64_t mark = ws_state_mark(l, s, &nacked);

	fprintf(f, "{\"id\":%" PRIu64 ",\"window\":%" PRIu64 ",\"after\":\"", s->id, s->win);
	put_barrier(f, w);
	fprintf(f, "\",\"flush\":%" PRIu64 ",\"kind\":\"%s\",\"durable_writes\":%" PRIu64
		",\"pending_writes\":%" PRIu64,
		w->flush_no, ws_kind_names[s->kind], w->durable, s->n);
	for (int want = 1; want >= 0; want--) {
		fprintf(f, ",\"%s_count\":%" PRIu64 ",\"%s\":[", want ? "kept" : "dropped",
			count_keeps(x, s, want), want ? "kept" : "dropped");
		put_ranges(f, x, s, want, true);
		fputc(']', f);
	}
	fprintf(f, ",\"torn\":[");
	put_ranges(f, x, s, 2, true);
	fprintf(f, "],\"mark\":");
	if (mark >= 0)
		put_json_str(f, l->marks[mark].text);
	else
		fputs("null", f);
	fprintf(f, ",\"marks_acknowledged\":%" PRIu64, nacked);
}

void xp_put_state_line(FILE *f, const struct xp *x, const struct ws_state *s)
{
	const struct ws_log *l = &x->log;
	uint64_t nacked;
	int64_t mark = ws_state_mark(l, s, &nacked);

	fprintf(f, "%" PRIu64 " %s window %" PRIu64 " flush %" PRIu64 ": kept %" PRIu64
		", dropped %" PRIu64 ", torn %" PRIu64, s->id, ws_kind_names[s->kind], s->win,
		l->win[s->win].flush_no, count_keeps(x, s, 1), count_keeps(x, s, 0),
		count_keeps(x, s, 2));
	if (count_keeps(x, s, 2)) {
		fputs(" (", f);
		put_ranges(f, x, s, 2, false);
		fputs(" )", f);
	}
	fprintf(f, "; marks acknowledged %" PRIu64 ", mark %s\n", nacked,
		mark >= 0 ? l->marks[mark].text : "(none)");
}

/* Per kind: the states in the log (or the chosen set), picked and checked. */
static void put_kinds(FILE *f, const struct xp *x, bool json)
{
	bool first = true;

	for (unsigned int k = 0; k < xp_nkinds(); k++) {
		const struct xp_kind_count *c = &x->kinds[k];

		if (!c->states)
			continue;
		if (json)
			fprintf(f, "%s\"%s\":{\"states\":%" PRIu64 ",\"planned\":%" PRIu64
				",\"checked\":%" PRIu64 ",\"failed\":%" PRIu64 "}", first ? "" : ",",
				ws_kind_names[k], c->states, c->planned, c->checked, c->failed);
		else
			fprintf(f, "%s %s %" PRIu64 " states, %" PRIu64 " checked, %" PRIu64
				" failed", first ? "" : ";", ws_kind_names[k], c->states, c->checked,
				c->failed);
		first = false;
	}
}

/* The causes first: each group's count, signature and a representative to rebuild. */
static void put_groups_text(FILE *f, const struct xp *x)
{
	if (!x->groups.n)
		return;
	fprintf(f, "explore: %" PRIu64 " failing states, %" PRIu64 " cause%s:\n", x->nfails,
		x->groups.n, x->groups.n == 1 ? "" : "s");
	for (uint64_t i = 0; i < x->groups.n; i++) {
		const struct xp_group *g = &x->groups.g[i];

		fprintf(f, "  cause %" PRIu64 ": %" PRIu64 " state%s: %s\n", i + 1, g->count,
			g->count == 1 ? "" : "s", g->signature);
		fprintf(f, "    e.g. state %" PRIu64 ": ", g->members[0]);
		put_rebuild(f, x, g->members[0]);
		fputc('\n', f);
	}
}

static void put_groups_json(FILE *f, const struct xp *x)
{
	fprintf(f, ",\"groups\":[");
	for (uint64_t i = 0; i < x->groups.n; i++) {
		const struct xp_group *g = &x->groups.g[i];

		fprintf(f, "%s{\"count\":%" PRIu64 ",\"signature\":", i ? "," : "", g->count);
		put_json_str(f, g->signature);
		fprintf(f, ",\"states\":[");
		for (uint64_t m = 0; m < g->count; m++)
			fprintf(f, "%s%" PRIu64, m ? "," : "", g->members[m]);
		fprintf(f, "]}");
	}
	fputc(']', f);
}

static void report_text(const struct xp *x, FILE *f)
{
	const struct ws_log *l = &x->log;

	char cut_short[256];

	fprintf(f, "explore: %" PRIu64 " crash states in %" PRIu64 " windows (-k %u)%s\n",
		l->nstates, l->nwin, x->k, l->cut ? "; the log ends at a power cut" : "");
	if (l->cut_short) {
		wlog_cut_short_text(cut_short, sizeof(cut_short), l->cut_short_after,
				    l->cut_short);
		fprintf(f, "explore: LOG: %s\n", cut_short);
	}
	if (x->sampled)
		fprintf(f, "explore: over the budget: %" PRIu64 " states %s with seed %" PRIu64
			"\n", x->planned, x->sel.uniform ? "sampled uniformly" :
			"spread over every kind and window", x->seed);
	if (x->shard.count)
		fprintf(f, "explore: shard %" PRIu64 " of 0-%" PRIu64 ": %" PRIu64 " of the %" PRIu64
			" states (plugdisk explore --merge joins the shards' --json reports)\n",
			x->shard.index, x->shard.count - 1, x->shard.states, x->planned);
	if (x->sel.has_from_flush || x->sel.from_mark) {
		fprintf(f, "explore: from ");
		if (x->sel.from_mark)
			fprintf(f, "mark '%s'", x->sel.from_mark);
		else
			fprintf(f, "flush %" PRIu64, x->sel.from_flush);
		fprintf(f, ": the %" PRIu64 " writes logged before it durable by decree\n",
			x->sel.from_ops);
	}
	fprintf(f, "explore: by kind:");
	put_kinds(f, x, false);
	fputc('\n', f);
	put_groups_text(f, x);
	for (uint64_t i = 0; i < x->nfails; i++) {
		const struct xp_fail *fl = &x->fails[i];
		struct ws_state s;
		uint64_t nacked;
		int64_t mark;

		ws_state_decode(l, fl->id, &s);
		mark = ws_state_mark(l, &s, &nacked);
		fprintf(f, "\nFAIL state %" PRIu64 ": after ", fl->id);
		put_barrier(f, &l->win[s.win]);
		fprintf(f, "; %s: ", ws_kind_names[s.kind]);
		put_kind(f, &s);
		fprintf(f, "\n  durable writes: %" PRIu64 "\n", l->win[s.win].durable);
		fprintf(f, "  kept (%" PRIu64 "):", count_keeps(x, &s, 1));
		put_ranges(f, x, &s, 1, false);
		fprintf(f, "\n  dropped (%" PRIu64 "):", count_keeps(x, &s, 0));
		put_ranges(f, x, &s, 0, false);
		fprintf(f, "\n  torn (%" PRIu64 "):", count_keeps(x, &s, 2));
		put_ranges(f, x, &s, 2, false);
		fprintf(f, "\n  mark: %s; marks acknowledged before the cut: %" PRIu64 "\n",
			mark >= 0 ? l->marks[mark].text : "(none)", nacked);
		if (fl->has_culprit)
			put_culprit_text(f, x, &s, &fl->culprit);
		if (fl->timed_out)
			fprintf(f, "  checker: timed out after %g s (killed); output:\n",
				(double)x->timeout_ns / 1e9);
		else
			fprintf(f, "  checker: exit %d; output:\n", fl->status);
		for (const char *p = fl->output; p && *p;) {
			const char *nl = strchr(p, '\n');
			int len = nl ? (int)(nl - p) : (int)strlen(p);

			fprintf(f, "    | %.*s\n", len, p);
			p += len + (nl ? 1 : 0);
		}
		if (fl->image)
			fprintf(f, "  image: %s\n", fl->image);
		else if (x->keep_dir)
			fprintf(f, "  image: not kept (--keep-max %" PRIu64 " reached for its cause)\n",
				x->keep_max);
		fprintf(f, "  rebuild: ");
		put_rebuild(f, x, fl->id);
		fputc('\n', f);
	}
	fprintf(f, "\nexplore: %" PRIu64 " states: %" PRIu64 " checked, %" PRIu64 " passed, %"
		PRIu64 " failed, %" PRIu64 " skipped as identical to one checked\n",
		xp_run_states(x), x->checked, x->passed, x->nfails, x->dups);
	if (l->cut_short)
		fprintf(f, "explore: not every crash state: the log is cut short after record %"
			PRIu64 ", so the states after it are unknown\n", l->cut_short_after);
}

/* What --merge needs to check that shards' reports add up, and to print their report as one
 * run's: the options the report depends on, the inputs' fingerprints, the shard. */
static void put_inputs_json(FILE *f, const struct xp *x)
{
	const struct xp_print *p = &x->print;

	fprintf(f, "\"budget\":%" PRIu64 ",\"from_flush\":", x->budget);
	if (x->sel.has_from_flush)
		fprintf(f, "%" PRIu64, x->sel.from_flush);
	else
		fputs("null", f);
	fprintf(f, ",\"from_mark\":");
	if (x->sel.from_mark)
		put_json_str(f, x->sel.from_mark);
	else
		fputs("null", f);
	fprintf(f, ",\"timeout_ns\":%" PRIu64 ",\"keep_failing\":", x->timeout_ns);
	if (x->keep_dir)
		put_json_str(f, x->keep_dir);
	else
		fputs("null", f);
	fprintf(f, ",\"keep_max\":%" PRIu64 ",\"log_size\":%" PRIu64 ",\"log_hash\":\"%016"
		PRIx64 "\",\"base_size\":%" PRIu64 ",\"base_hash\":\"%016" PRIx64 "\",\"plan_hash\":"
		"\"%016" PRIx64 "\",\"shard\":", x->keep_max, p->log_size, p->log_hash, p->base_size,
		p->base_hash, p->plan_hash);
	if (x->shard.count)
		fprintf(f, "{\"index\":%" PRIu64 ",\"count\":%" PRIu64 ",\"states\":%" PRIu64 "}",
			x->shard.index, x->shard.count, x->shard.states);
	else
		fputs("null", f);
}

static void report_json(const struct xp *x, FILE *f)
{
	const struct ws_log *l = &x->log;

	fprintf(f, "{\"log\":");
	put_json_str(f, x->log_path);
	fprintf(f, ",\"base\":");
	put_json_str(f, x->base_path);
	fprintf(f, ",\"k\":%u,\"seed\":%" PRIu64 ",\"states_total\":%" PRIu64 ",\"windows\":%" PRIu64
		",\"log_cut\":%s,\"sampled\":%s,\"planned\":%" PRIu64 ",\"checked\":%" PRIu64
		",\"passed\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"duplicates\":%" PRIu64
		",\"sampler\":\"%s\",\"kinds\":{",
		x->k, x->seed, l->nstates, l->nwin, l->cut ? "true" : "false",
		x->sampled ? "true" : "false", x->planned, x->checked, x->passed, x->nfails, x->dups,
		x->sel.uniform ? "uniform" : "stratified");
	put_kinds(f, x, true);
	fprintf(f, "},\"log_cut_short\":");
	if (l->cut_short)
		fprintf(f, "{\"after_record\":%" PRIu64 ",\"at_byte\":%" PRIu64 "}",
			l->cut_short_after, l->cut_short);
	else
		fputs("null", f);
	fprintf(f, ",\"from_writes\":%" PRIu64 ",", x->sel.from_ops);
	put_inputs_json(f, x);
	put_groups_json(f, x);
	fprintf(f, ",\"failures\":[");
	for (uint64_t i = 0; i < x->nfails; i++) {
		const struct xp_fail *fl = &x->fails[i];
		struct ws_state s;

		ws_state_decode(l, fl->id, &s);
		fputs(i ? "," : "", f);
		xp_put_state_json(f, x, &s);
		if (fl->has_culprit)
			put_culprit_json(f, x, &s, &fl->culprit);
		fprintf(f, ",\"status\":%d,\"timed_out\":%s,\"output\":", fl->status,
			fl->timed_out ? "true" : "false");
		put_json_str(f, fl->output ? fl->output : "");
		fprintf(f, ",\"image\":");
		if (fl->image)
			put_json_str(f, fl->image);
		else
			fputs("null", f);
		fprintf(f, ",\"rebuild\":\"");
		{
			char *buf = NULL;
			size_t len = 0;
			FILE *m = open_memstream(&buf, &len);

			if (m) {
				put_rebuild(m, x, fl->id);
				fclose(m);
				/* the command as a JSON string's inside */
				for (size_t c = 0; c < len; c++)
					if (buf[c] == '"' || buf[c] == '\\')
						fprintf(f, "\\%c", buf[c]);
					else
						fputc(buf[c], f);
			}
			free(buf);
		}
		fprintf(f, "\"}");
	}
	fprintf(f, "]}\n");
}

int xp_status(const struct xp *x)
{
	if (x->nfails)
		return 1;
	return x->log.cut_short ? EXIT_INCOMPLETE : 0;
}

void xp_report(const struct xp *x, FILE *f)
{
	if (x->json)
		report_json(x, f);
	else
		report_text(x, f);
}
