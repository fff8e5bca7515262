/* cli_args.c - the rlx tool's commands read through their option tables
 * (cli_command, cli_option in cli.h): scanning argv (unknown options and
 * stray arguments reported, --help / -h noticed), the option values with
 * clear messages, the required options checked in the order of the usage
 * line, and the usage lines and help texts, all drawn from the same table. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define WIDTH 80      /* help lines wrap before this column */
#define OPTION_COL 24 /* where an option's help starts in rlx <command> --help */

static int is_positional(const cli_option *o) { return o->name[0] != '-'; }
static int need_of(const cli_option *o) { return o->need & ~CLI_REPEATED; }

/* ---- scanning --------------------------------------------------------------- */

void cli_args_init(cli_args *a, const cli_command *c, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  a->command = c;
  a->cmd = c->name;
  a->argc = argc;
  a->argv = argv;
  a->i = 1; /* argv[1] is the command */
  a->opt = -1;
}

int cli_args_is_option(const cli_args *a) { return a->name[0] == '-' && a->name[1] != 0; }

int cli_args_next(cli_args *a) {
  a->i++;
  a->inline_value = NULL;
  a->opt = -1;
  if (a->i >= a->argc) return 0;
  const char *w = a->argv[a->i];
  const char *eq = strncmp(w, "--", 2) == 0 ? strchr(w, '=') : NULL;
  if (eq && (size_t)(eq - w) < sizeof a->name_buf) {
    memcpy(a->name_buf, w, (size_t)(eq - w));
    a->name_buf[eq - w] = 0;
    a->name = a->name_buf;
    a->inline_value = eq + 1;
  } else {
    a->name = w;
  }
  if (!a->inline_value && (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0)) {
    a->help = 1;
    return 0;
  }
  const cli_option *opts = a->command->options;
  int option = cli_args_is_option(a);
  for (int k = 0; opts[k].name && k < 64; k++) {
    const cli_option *o = &opts[k];
    int named = strcmp(a->name, o->name) == 0 || (o->alias && strcmp(a->name, o->alias) == 0);
    int match = option ? !is_positional(o) && named : is_positional(o) && !(a->seen >> k & 1);
    if (match) {
      a->seen |= 1ull << k;
      a->opt = k;
      return 1;
    }
  }
  if (option)
    cli_usage_error(a->cmd, "unknown option '%s'", a->name);
  else
    cli_usage_error(a->cmd, "unexpected argument '%s'", a->name);
  a->failed = 1;
  return 0;
}

/* "--model FILE.gguf" or "FILE.gguf" into buf. */
static const char *option_text(const cli_option *o, char *buf, size_t cap) {
  snprintf(buf, cap, "%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
  return buf;
}

/* Reports a missing option with the usage line; returns CLI_USAGE. */
static int missing(cli_args *a, const char *what, const char *text) {
  cli_progress_clear();
  fprintf(stderr, "rlx %s: %s%s\n", a->cmd, what, text);
  cli_print_usage(stderr, a->command);
  fprintf(stderr, "(run 'rlx %s --help' for the options)\n", a->cmd);
  return CLI_USAGE;
}

int cli_args_end(cli_args *a) {
  if (a->failed) return CLI_USAGE;
  if (a->help) {
    cli_print_help(a->command);
    return CLI_OK;
  }
  const cli_option *opts = a->command->options;
  char text[256], one[96];
  for (int k = 0; opts[k].name; k++) {
    if (need_of(&opts[k]) == CLI_ONE_OF) {
      int given = 0, end = k;
      size_t n = 0;
      for (; opts[end].name && need_of(&opts[end]) == CLI_ONE_OF; end++) {
        given += (int)(a->seen >> end & 1);
        n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", end > k ? (opts[end + 1].name &&
                              need_of(&opts[end + 1]) == CLI_ONE_OF ? ", " : " or ") : "",
                              option_text(&opts[end], one, sizeof one));
        if (n >= sizeof text) n = sizeof text - 1;
      }
      if (given != 1) return missing(a, given ? "give only one of " : "give one of ", text);
      k = end - 1;
    } else if (need_of(&opts[k]) == CLI_REQUIRED && !(a->seen >> k & 1)) {
      snprintf(text, sizeof text, "%s is required", option_text(&opts[k], one, sizeof one));
      return missing(a, "", text);
    }
  }
  return -1;
}

/* ---- values ------------------------------------------------------------------ */

int cli_opt_string(cli_args *a, const char **out) {
  if (a->inline_value) {
    if (!a->inline_value[0]) {
      cli_usage_error(a->cmd, "%s needs a value", a->name);
      return 0;
    }
    *out = a->inline_value;
    return 1;
  }
  if (a->i + 1 >= a->argc || strncmp(a->argv[a->i + 1], "--", 2) == 0 || !a->argv[a->i + 1][0]) {
    cli_usage_error(a->cmd, "%s needs a value", a->name);
    return 0;
  }
  *out = a->argv[++a->i];
  return 1;
}

int cli_opt_long(cli_args *a, long min, long max, long *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || *end || errno == ERANGE || x < min || x > max) {
    cli_usage_error(a->cmd, "%s must be a whole number from %ld to %ld (got '%s')", a->name, min, max, v);
    return 0;
  }
  *out = x;
  return 1;
}

int cli_opt_float(cli_args *a, double min, double max, double *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || *end || !isfinite(x) || !(x > min) || x > max) {
    cli_usage_error(a->cmd, "%s must be a number above %g and at most %g (got '%s')", a->name, min, max, v);
    return 0;
  }
  *out = x;
  return 1;
}

int cli_opt_u64(cli_args *a, uint64_t *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (v[0] < '0' || v[0] > '9' || *end || errno == ERANGE) {
    cli_usage_error(a->cmd, "%s must be a whole number from 0 to 18446744073709551615 (got '%s')", a->name, v);
    return 0;
  }
  *out = (uint64_t)x;
  return 1;
}

/* ---- usage and help ------------------------------------------------------------ */

/* Prints text from column col, wrapping before WIDTH with continuation
 * lines indented by indent; returns the column it ends at. */
static int print_wrapped(FILE *f, const char *text, int col, int indent) {
  const char *p = text;
  while (*p) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, " ");
    if (!len) break;
    if (col > indent && col + 1 + (int)len > WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', f);
      col++;
    }
    fwrite(p, 1, len, f);
    col += (int)len;
    p += len;
  }
  return col;
}

/* The usage line's piece for opts[*k] into buf ("--model M", "[--epochs E]",
 * "[--stop TEXT]...", "FILE.gguf", "[M]", "(--prompt TEXT | --prompt-ids
 * I,J,..)" for a run of CLI_ONE_OF); advances *k past what it covered. */
static const char *usage_piece(const cli_option *opts, int *k, char *buf, size_t cap) {
  char one[96];
  const cli_option *o = &opts[*k];
  size_t n = 0;
  if (need_of(o) == CLI_ONE_OF) {
    n += (size_t)snprintf(buf, cap, "(");
    for (int first = 1; opts[*k].name && need_of(&opts[*k]) == CLI_ONE_OF && n < cap; (*k)++, first = 0)
      n += (size_t)snprintf(buf + n, cap - n, "%s%s", first ? "" : " | ", option_text(&opts[*k], one, sizeof one));
    if (n < cap) snprintf(buf + n, cap - n, ")");
    return buf;
  }
  (*k)++;
  option_text(o, one, sizeof one);
  if (need_of(o) == CLI_REQUIRED)
    snprintf(buf, cap, "%s%s", one, o->need & CLI_REPEATED ? "..." : "");
  else
    snprintf(buf, cap, "[%s]%s", one, o->need & CLI_REPEATED ? "..." : "");
  return buf;
}

/* lead, then the usage pieces of c, wrapped with continuation lines at indent. */
static void print_pieces(FILE *f, const cli_command *c, const char *lead, int indent) {
  char piece[256];
  fputs(lead, f);
  int col = (int)strlen(lead);
  for (int k = 0; c->options[k].name;) {
    usage_piece(c->options, &k, piece, sizeof piece);
    if (col > indent && col + 1 + (int)strlen(piece) > WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else {
      fputc(' ', f);
      col++;
    }
    fputs(piece, f);
    col += (int)strlen(piece);
  }
  fputc('\n', f);
}

void cli_print_usage(FILE *f, const cli_command *c) {
  char lead[64];
  snprintf(lead, sizeof lead, "usage: rlx %s", c->name);
  print_pieces(f, c, lead, (int)strlen(lead) + 1);
}

void cli_print_help(const cli_command *c) {
  char one[96], text[1024];
  cli_print_usage(stdout, c);
  printf("\n");
  print_wrapped(stdout, c->about ? c->about : c->summary, 0, 0);
  printf("\n\noptions:\n");
  const cli_option *opts = c->options;
  for (int k = 0; opts[k].name; k++) {
    const cli_option *o = &opts[k];
    int col = printf("  %s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "", option_text(o, one, sizeof one));
    if (col + 2 > OPTION_COL) {
      printf("\n");
      col = 0;
    }
    printf("%*s", OPTION_COL - col, "");
    size_t n = (size_t)snprintf(text, sizeof text, "%s", o->help);
    if (need_of(o) == CLI_REQUIRED && n < sizeof text) n += (size_t)snprintf(text + n, sizeof text - n, "; required");
    if (need_of(o) == CLI_ONE_OF && n < sizeof text) {
      n += (size_t)snprintf(text + n, sizeof text - n, "; this or");
      for (int j = k - 1; j >= 0 && need_of(&opts[j]) == CLI_ONE_OF && n < sizeof text; j--)
        n += (size_t)snprintf(text + n, sizeof text - n, " %s", opts[j].name);
      for (int j = k + 1; opts[j].name && need_of(&opts[j]) == CLI_ONE_OF && n < sizeof text; j++)
        n += (size_t)snprintf(text + n, sizeof text - n, " %s", opts[j].name);
    }
    if (o->need & CLI_REPEATED && n < sizeof text) snprintf(text + n, sizeof text - n, "; may be repeated");
    print_wrapped(stdout, text, OPTION_COL, OPTION_COL);
    printf("\n");
  }
  printf("  -h, --help%*sthis help\n", OPTION_COL - 12, "");
  if (c->notes) {
    c->notes(text, sizeof text);
    printf("\n");
    print_wrapped(stdout, text, 0, 0);
    printf("\n");
  }
}

void cli_print_overview(FILE *f) {
  fprintf(f, "usage: rlx <command> [options]\n"
             "       rlx <command> --help    that command's usage and options\n\ncommands:\n");
  for (int i = 0; cli_commands[i]; i++) {
    const cli_command *c = cli_commands[i];
    char lead[64];
    snprintf(lead, sizeof lead, "  %s", c->name);
    print_pieces(f, c, lead, 8);
    fprintf(f, "%8s", "");
    print_wrapped(f, c->summary, 8, 8);
    fprintf(f, "\n");
  }
}

const cli_command *cli_find_command(const char *name) {
  for (int i = 0; cli_commands[i]; i++)
    if (strcmp(cli_commands[i]->name, name) == 0) return cli_commands[i];
  return NULL;
}
