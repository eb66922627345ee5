/* embed.c: a batch job built against the installed prstm: bank transfers built in memory, run, and their outcomes, results and final balances checked. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prstm.h"

#define ACCOUNTS 1000
#define INITIAL_BALANCE 100
#define TRANSFERS 100000
#define QUERIES 10
#define SHOWN_UNFINISHED 5 /* abandoned or failed transactions printed */

/* Prints what failed and why. The engine carries a message of its own for
 * the calls that take it; a batch call has only its code. Only main exits. */
static int report_error(const char *what, const prstm_engine *engine, int rc) {
  const char *detail = engine && prstm_engine_error(engine)[0] ? prstm_engine_error(engine) : prstm_strerror(rc);
  fprintf(stderr, "embed: %s: %s (%s)\n", what, detail, prstm_err_name(rc));
  return 1;
}

/* A small deterministic generator, so every run builds the same batch. */
static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Appends the batch: random transfers between accounts, a few balance
 * queries, and one withdrawal larger than all the money in the bank, which
 * can never be funded and so must end abandoned. */
static int build_batch(prstm_batch *batch) {
  uint64_t seed = 42;
  int rc = 0;
  for (int i = 0; i < TRANSFERS && rc == 0; i++) {
    prstm_word from = next_random(&seed) % ACCOUNTS, to = next_random(&seed) % ACCOUNTS;
    prstm_word transfer[3] = {from, to, 1 + next_random(&seed) % 50};
    rc = prstm_batch_append_named(batch, "transfer", transfer, 3);
  }
  for (int i = 0; i < QUERIES && rc == 0; i++) {
    prstm_word account = (prstm_word)i * (ACCOUNTS / QUERIES);
    rc = prstm_batch_append_named(batch, "balance", &account, 1);
  }
  if (rc == 0) {
    prstm_word withdraw[2] = {0, (prstm_word)ACCOUNTS * INITIAL_BALANCE + 1};
    rc = prstm_batch_append_named(batch, "withdraw", withdraw, 2);
  }
  return rc;
}

int main(int argc, char **argv) {
  prstm_options opt;
  prstm_options_init(&opt);
  opt.backend = PRSTM_BACKEND_CPU;
  opt.verify = 1; /* also replay the run serially and compare */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cpu") == 0)
      opt.backend = PRSTM_BACKEND_CPU;
    else if (strcmp(argv[i], "--gpu") == 0)
      opt.backend = PRSTM_BACKEND_GPU;
    else if (strcmp(argv[i], "--auto") == 0)
      opt.backend = PRSTM_BACKEND_AUTO;
    else {
      fprintf(stderr, "usage: embed [--cpu|--gpu|--auto]   (default --cpu)\n");
      return 2;
    }
  }

  const prstm_workload *bank = prstm_workload_find("bank");
  if (bank == NULL) {
    fprintf(stderr, "embed: this prstm library has no built-in bank workload\n");
    return 1;
  }
  /* prstm_engine_create hands back the engine even when it refuses the
   * options, so that its message can be read; it is destroyed either way. */
  prstm_engine *engine = NULL;
  prstm_batch *batch = NULL;
  int status = 1, rc = prstm_engine_create(&engine, bank, &opt);
  if (rc) {
    report_error("create the engine", engine, rc);
    goto done;
  }
  prstm_state_spec state;
  prstm_state_spec_init(bank, &state);
  state.accounts = ACCOUNTS;
  state.initial_balance = INITIAL_BALANCE;
  if ((rc = prstm_engine_init_state(engine, &state))) {
    report_error("set the initial balances", engine, rc);
    goto done;
  }
  if ((rc = prstm_batch_create(&batch, bank)) || (rc = build_batch(batch))) {
    report_error("build the batch", NULL, rc);
    goto done;
  }

  prstm_results res;
  if ((rc = prstm_engine_run(engine, batch, &res))) {
    report_error("run", engine, rc);
    goto done;
  }
  if (res.fallback[0]) fprintf(stderr, "embed: running on the CPU: %s\n", res.fallback);

  /* Outcomes: count each status, add up the money the committed withdrawals
   * took out, and print the balance queries' results. A transfer whose
   * source never holds enough ends abandoned: a result, not an error. */
  uint64_t count[4] = {0}, withdrawn = 0;
  unsigned withdraw_type = (unsigned)prstm_type_find(bank, "withdraw");
  unsigned balance_type = (unsigned)prstm_type_find(bank, "balance");
  for (uint64_t i = 0; i < prstm_batch_size(batch); i++) {
    prstm_status st;
    unsigned reason;
    prstm_word result;
    if ((rc = prstm_batch_outcome(batch, i, &st, &reason, &result))) {
      report_error("read an outcome", NULL, rc);
      goto done;
    }
    count[st]++;
    unsigned type = prstm_batch_type(batch, i);
    if (type == withdraw_type && st == PRSTM_COMMITTED) withdrawn += prstm_batch_arg(batch, i, 1);
    if (type == balance_type && st == PRSTM_COMMITTED)
      printf("balance of account %" PRIu64 ": %" PRIu64 "\n", prstm_batch_arg(batch, i, 0), result);
    if ((st == PRSTM_ABANDONED || st == PRSTM_FAILED) &&
        count[PRSTM_ABANDONED] + count[PRSTM_FAILED] <= SHOWN_UNFINISHED)
      printf("transaction %" PRIu64 " (%s) %s: %s\n", i, bank->types[type].name, prstm_status_name(st),
             prstm_reason_string(bank, type, reason));
  }

  if (count[PRSTM_ABANDONED] + count[PRSTM_FAILED] > SHOWN_UNFINISHED)
    printf("... and %" PRIu64 " more abandoned or failed\n",
           count[PRSTM_ABANDONED] + count[PRSTM_FAILED] - SHOWN_UNFINISHED);

  /* Final balances: no money is created or lost, so the total is the initial
   * total less what committed withdrawals took out. */
  uint64_t nwords = 0, total = 0;
  const prstm_word *balances = prstm_engine_state(engine, &nwords);
  for (uint64_t a = 0; a < nwords; a++) total += balances[a];
  uint64_t expected = (uint64_t)ACCOUNTS * INITIAL_BALANCE - withdrawn;

  int invariant_ok = 0;
  char invariant[256];
  if ((rc = prstm_engine_check_invariant(engine, batch, &invariant_ok, invariant, sizeof invariant))) {
    fprintf(stderr, "embed: check the invariant: %s\n", invariant);
    goto done;
  }
  prstm_verify_report verify;
  if ((rc = prstm_engine_verify(engine, batch, &verify))) {
    report_error("verify", engine, rc);
    goto done;
  }

  printf("%" PRIu64 " transactions on %s (%s): %" PRIu64 " committed, %" PRIu64 " abandoned, %" PRIu64
         " failed, %" PRIu64 " concurrent aborts, %" PRIu64 " postponements\n",
         res.transactions, res.backend == PRSTM_BACKEND_GPU ? "gpu" : "cpu", res.device, res.committed, res.abandoned,
         res.failed, res.aborts, res.postponements);
  int counts_ok = count[PRSTM_PENDING] == 0 && count[PRSTM_COMMITTED] == res.committed &&
                  count[PRSTM_ABANDONED] == res.abandoned && count[PRSTM_FAILED] == res.failed;
  int total_ok = total == expected;
  /* The withdrawal of more than all the money must never commit. */
  int withdrawal_ok = withdrawn == 0 && count[PRSTM_ABANDONED] >= 1;
  printf("outcomes %s the results' counts\n", counts_ok ? "match" : "DO NOT MATCH");
  printf("total money %" PRIu64 " %s expected %" PRIu64 "\n", total, total_ok ? "=" : "!=", expected);
  printf("impossible withdrawal %s\n", withdrawal_ok ? "abandoned" : "NOT ABANDONED");
  printf("invariant %s: %s\n", invariant_ok ? "ok" : "VIOLATED", invariant);
  printf("verify %s: %s\n", verify.ok ? "ok" : "FAILED", verify.message);
  status = counts_ok && total_ok && withdrawal_ok && invariant_ok && verify.ok ? 0 : 1;

done:
  prstm_batch_destroy(batch);
  prstm_engine_destroy(engine);
  return status;
}
