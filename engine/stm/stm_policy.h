/* stm_policy.h: the engine's tuning in one place: the GPU kernel's shape, where a transaction's sets live, how waits back off, how often threads publish their counts, and how a stream cuts and copies its units. */
#ifndef STM_POLICY_H
#define STM_POLICY_H

/* Every number here was chosen by measurement on the workload configs and
 * the contention sweeps; docs/PERFORMANCE.md says what each one bought. A
 * worker variant's own GPU tuning (threads per SM, the most threads worth
 * launching) is its prstm_gpu_policy (prstm.h). */

/* ---- The GPU kernel's shape (compile time: launch bounds, shared arrays) ---- */

/* Threads of a block of the persistent kernel. */
#define PRSTM_POLICY_BLOCK_THREADS 128
/* At least this many blocks an SM (512 threads), which leaves ptxas up to
 * 128 registers a thread: with the block size alone as the bound it aimed
 * at 16 blocks an SM, capped the walk at 40 to 72 registers and spilled. */
#define PRSTM_POLICY_MIN_BLOCKS_PER_SM 4
/* Sets of at most this many entries live in shared memory (56 bytes an
 * entry a thread), wider ones in thread-local memory, whose stores go on to
 * L2 and competed with the state's traffic there. */
#define PRSTM_POLICY_SHARED_SET_MAX 4
/* Attempts of a row's first visit that lock each word as they read it,
 * where a body header asks for it (PRSTM_FIRST_ATTEMPT_LOCKS): an attempt
 * that met a held lock (or ended otherwise) retries the same cheap way,
 * after waiting for any holder, instead of by invisible reads, validation and four CASes
 * (on 2.5M accounts, 4.5% of first attempts meet one). Each such attempt
 * may take a pre-lock away whatever its priority, so the number is bounded:
 * past it, the priority rule decides every retry. */
#define PRSTM_POLICY_EARLY_LOCK_ATTEMPTS 3u
/* Threads per SM when neither the run nor the worker variant says: more
 * threads in flight mostly add concurrent conflicts. */
#define PRSTM_POLICY_THREADS_PER_SM 256u

/* ---- Waiting ---- */

/* Rounds an attempt that lost to a lock holder waits for the holder's lock
 * word to change before it retries (cmp_wait_conflict). */
#define PRSTM_POLICY_CONFLICT_WAIT_ROUNDS 128u
/* Rounds a committer holding its final locks waits for the lock of its
 * ticket's counter (prstm_ticket) before it gives everything back and
 * retries: long enough to outlast a queue of tickets on one counter, and
 * bounded, so that two committers that each hold what the other's counter
 * needs cannot wait for ever. */
#define PRSTM_POLICY_TICKET_WAIT_ROUNDS 8192u
/* A GPU pause of round r sleeps PAUSE_NS * r, at most PAUSE_MAX_NS. */
#define PRSTM_POLICY_PAUSE_NS 32u
#define PRSTM_POLICY_PAUSE_MAX_NS 2048u
/* A stalled GPU thread's back-off: from BACKOFF_MIN_NS doubling, and at
 * least BACKOFF_SWEEP_FACTOR times what its last sweep took, so that it
 * spends at most a ninth of its time re-checking postponed rows; bounded
 * by BACKOFF_MAX_NS. */
#define PRSTM_POLICY_BACKOFF_MIN_NS 128ull
#define PRSTM_POLICY_BACKOFF_SWEEP_FACTOR 8u
#define PRSTM_POLICY_BACKOFF_MAX_NS 2000000ull

/* ---- Hot spots: the delta path (engine/delta.h) and threads in flight ---- */

/* Rows of the sample from which a run measures how hot its words are
 * (engine_contention_sample). */
#define PRSTM_POLICY_CONTENTION_SAMPLE_ROWS 16384u
/* The sample takes its rows in runs of this many consecutive rows. */
#define PRSTM_POLICY_CONTENTION_SAMPLE_RUN 256u
/* With options.deltas AUTO, a batch of declared steps takes the delta path
 * when a transaction would meet at least this many others on its words in
 * the STM, on average, */
#define PRSTM_POLICY_DELTA_HOT_CONFLICTS 1.0
/* or when one word came at least this often in the sample (a uniform batch
 * over a million words gives at most 3 or 4) and at least one transaction
 * would be in flight on it at any time. */
#define PRSTM_POLICY_HOT_WORD_COUNT 6u
/* On the CPU, a batch of declared steps also takes the path when the state
 * has at most this many words (32 KiB): the one-thread walk then runs in
 * the first-level cache and kept up with 16 STM threads at 1,000 accounts;
 * at 10^4 to 10^6 accounts the threads were ahead. */
#define PRSTM_POLICY_DELTA_CPU_CACHED_WORDS 4096u
/* The CPU's delta path walks a batch of at least this many steps over a
 * larger state on every thread, each thread the words of its own buckets:
 * below it, starting the threads and bucketing the steps cost more than the
 * one-thread walk. */
#define PRSTM_POLICY_DELTA_CPU_PARALLEL_STEPS (1u << 20)
/* A GPU run through the STM with the default thread count keeps only as
 * many transactions in flight as meet this many others each, on average:
 * beyond that, more threads add aborts, not commits. */
#define PRSTM_POLICY_INFLIGHT_CONFLICTS 4.0
/* With backend auto, a batch that cannot take the delta path runs on the
 * CPU where, with a GPU's AUTO_GPU_INFLIGHT threads, a transaction would
 * meet AUTO_CPU_CONFLICTS others or the hottest word would hold
 * AUTO_CPU_HOT_WORD_QUEUE transactions at once: there the GPU's STM trailed
 * the CPU's (1,000 accounts: 270 conflicts; Zipf 0.8: 1,400 on account 0),
 * and led it below (10,000 accounts: 27 and about 45). */
#define PRSTM_POLICY_AUTO_GPU_INFLIGHT 65536u
#define PRSTM_POLICY_AUTO_CPU_CONFLICTS 100.0
#define PRSTM_POLICY_AUTO_CPU_HOT_WORD_QUEUE 64.0

/* ---- The CPU backend ---- */

/* The most threads it starts: 64 a core, at least 1,024 (the stress tests
 * run 128 threads on 2 cores; more only time-slice the same cores). */
#define PRSTM_POLICY_CPU_THREADS_PER_CORE_MAX 64u
#define PRSTM_POLICY_CPU_THREADS_MIN_MAX 1024u

/* ---- Publishing counts (watchdog, progress observer) ---- */

/* A thread adds its commits, failures and abandonments to the global
 * progress words every PROGRESS_BATCH decisions, or when PROGRESS_NS passed
 * since it last did: often enough for a watchdog or a progress bar even
 * when each decision is slow, rarely enough to cost nothing. */
#define PRSTM_POLICY_PROGRESS_BATCH 256u
#define PRSTM_POLICY_PROGRESS_NS 50000000ull

/* ---- A whole run's copies (host) ---- */

/* An engine takes two pinned chunks of STAGED_COPY_CHUNK bytes when it
 * warms up (prstm_engine_warm_up, backends gpu and auto), for a run that
 * narrows its arguments (below), or once its whole runs and streams have
 * copied STAGED_COPY_MIN_BYTES between pageable host memory and the GPU
 * (the larger way of each run, and each stream's state once, summed), and
 * keeps them: every copy of STAGED_COPY_LEAST_BYTES or more from or to
 * pageable memory then goes through them (a stream's state at its open
 * and close too), filled and emptied in parts of at least
 * STAGED_COPY_BYTES_PER_PART by threads the chunks keep, in pieces of a
 * chunk, or of a quarter of a shorter copy (engine/backend_gpu.cu). An 8
 * MiB copy took 0.38 to 0.47 ms up and 0.26 to 0.34 ms down in one piece
 * on an H200's host, against 0.70 to 1.34 ms and
 * 0.61 to 0.64 ms direct from pageable memory; below a MiB the threads'
 * wake-up is not worth it. Without the chunks a run page-locks in place
 * instead (below). Taking them costs 5 to 12 ms on an H200's host, as much
 * as the page-locking it saves a run of 200 MB, so an engine that does not
 * warm up takes them on need only. */
#define PRSTM_POLICY_STAGED_COPY_MIN_BYTES (512ull << 20)
#define PRSTM_POLICY_STAGED_COPY_CHUNK (32ull << 20)
#define PRSTM_POLICY_STAGED_COPY_LEAST_BYTES (1ull << 20)
#define PRSTM_POLICY_STAGED_COPY_BYTES_PER_PART (1ull << 20)
/* Without the chunks, a run page-locks in place (cudaHostRegister) each
 * range of ordinary host memory of at least LOCK_PAGES_MIN_BYTES that it
 * copies, for the length of the run (with them, each such range smaller
 * than a chunk, which goes direct): registering, copying and unregistering 160 MiB of
 * huge pages took 10 to 11 ms on an H200's host, against 24 to 27 ms for the
 * driver's own staging of a pageable copy, and 16 MiB 1.5 ms against about
 * 2.5 (bench/setup-probe). A chunked run locks its batch's columns whole
 * for its length when their rows have that many bytes: each unit then
 * copies straight from them instead of through its staging. */
#define PRSTM_POLICY_LOCK_PAGES_MIN_BYTES (16ull << 20)
/* A whole run whose argument columns take at least NARROW_ARGS_MIN_BYTES
 * uploads them as 32-bit values where every value fits: every core narrows
 * them into the staging chunks (taken for it if the engine has none), so
 * half the bytes cross the link and nothing is page-locked in place. The
 * first NARROW_ARGS_SAMPLE_ROWS rows of each column are looked at first, so
 * that a batch with wide values (TPC-C's packed quantities) does not start
 * a narrowing it would give up. */
#define PRSTM_POLICY_NARROW_ARGS_MIN_BYTES (16ull << 20)
#define PRSTM_POLICY_NARROW_ARGS_SAMPLE_ROWS 4096u

/* ---- Streams and chunked runs (host) ---- */

/* The most new rows of one GPU unit, so that its pinned staging stays a few
 * hundred MiB. */
#define PRSTM_POLICY_STREAM_MAX_UNIT_ROWS (8ull << 20)
/* Without the copying threads below (the CPU's streams, or a host of
 * fewer than four cores), copies into a unit's staging smaller than this
 * are made by the calling thread alone; larger ones by up to
 * STREAM_MAX_COPY_THREADS threads started for the copy. */
#define PRSTM_POLICY_STREAM_PARALLEL_BYTES (4ull << 20)
#define PRSTM_POLICY_STREAM_MAX_COPY_THREADS 8
/* A stream whose staging is filled while another unit runs (a GPU's) keeps
 * STREAM_MAX_COPY_THREADS - 1 helpers at most (half the cores, less the
 * caller's) for its life, which share every fill of at least
 * STREAM_POOL_MIN_BYTES. A chunked run on such a stream leaves its batch
 * pageable, and stages its units, when a unit's rows have from
 * STREAM_STAGED_UNIT_MIN_BYTES to less than STREAM_STAGED_UNIT_MAX_BYTES:
 * there a unit's fill and launch hid under the kernel before it, and the
 * run saved the locking of the batch (YCSB's 1 MB units). Smaller units
 * were bound by the host's launch, which staging lengthened (bank
 * transfers' 260 KB units), larger ones by the fill; both are copied
 * straight from the batch, page-locked for the run (LOCK_PAGES_MIN_BYTES). */
#define PRSTM_POLICY_STREAM_POOL_MIN_BYTES (64ull << 10)
#define PRSTM_POLICY_STREAM_STAGED_UNIT_MIN_BYTES (512ull << 10)
#define PRSTM_POLICY_STREAM_STAGED_UNIT_MAX_BYTES (4ull << 20)
/* A GPU stream's unit executes while units of other slots still do when it
 * takes at most 1 / STREAM_OVERLAP_SHARE of the stream's threads: a unit of
 * 10,000 rows leaves most of the GPU idle while its last rows retry, so the
 * next ones fill it; a large unit fills it alone. */
#define PRSTM_POLICY_STREAM_OVERLAP_SHARE 2u

/* ---- Co-execution (host, engine/hetero.c) ---- */

/* A co-executed run's first round: FIRST_ROUND_ROWS rows, half on each
 * unit, to measure how fast each one decides rows before the shares are
 * set. Backend multi's first round is a part in FIRST_ROUND_PARTS of the
 * batch and at least FIRST_ROUND_ROWS rows. */
#define PRSTM_POLICY_HETERO_FIRST_ROUND_ROWS 65536ull
#define PRSTM_POLICY_HETERO_FIRST_ROUND_PARTS 16u
/* Rounds shrink by half after a conflict and grow by double after a round
 * without one, between these bounds. */
#define PRSTM_POLICY_HETERO_MIN_ROUND_ROWS 1024ull
#define PRSTM_POLICY_HETERO_MAX_ROUND_ROWS (8ull << 20)
/* Nor shorter than one row for this many locks: reconciling scans the
 * marks of every lock. */
#define PRSTM_POLICY_HETERO_LOCKS_PER_ROUND_ROW 16u
/* A GPU unit's reconciliation sends the CPU's log and words up in pieces
 * of this many bytes, through two pinned halves, so that the host fills
 * one while the other goes up and the comparison of each piece runs
 * while the next one goes up. */
#define PRSTM_POLICY_HETERO_LOG_CHUNK (1ull << 20)
/* Neither unit's share of a round falls below one part in this many, so a
 * unit that lost its rows to conflicts keeps being measured. */
#define PRSTM_POLICY_HETERO_MIN_SHARE_PARTS 64u
/* A round is routed by the rows' words when at least one row in this many
 * names words the host can see; else it is split blindly. */
#define PRSTM_POLICY_HETERO_ROUTED_PARTS 8u
/* The host's work on a round's rows (staging, outcomes) is shared out
 * among threads in parts of at least this many rows. */
#define PRSTM_POLICY_HETERO_ROWS_PER_PART 65536u
/* When one unit decides rows this many times faster than the other, the
 * other would add less than a part in this many: the faster unit takes
 * every later round alone (the solo unit), with no routing and no marks
 * to compare. */
#define PRSTM_POLICY_HETERO_SOLO_RATIO 20.0
/* Before any round, a batch whose words the host sees is given whole to
 * one unit where its contention sample settles which is far the better:
 * the CPU backend where --backend auto would choose it (AUTO_CPU_*), the
 * GPU where a full GPU's transactions would meet fewer than
 * ALONE_GPU_CONFLICTS others and the hottest word fewer than
 * ALONE_GPU_HOT_WORD_QUEUE at once. There the GPU's STM decided rows 10 to
 * 70 times faster than 16 cores (docs/HETERO.md), so the CPU's share could
 * not pay for a single reconciliation. */
#define PRSTM_POLICY_HETERO_ALONE_GPU_CONFLICTS 1.0
#define PRSTM_POLICY_HETERO_ALONE_GPU_HOT_WORD_QUEUE 32.0
/* Otherwise, with a GPU as unit B, both units first run the batch's first
 * PROBE_ROWS rows, each on its replica, as a probe. Where one decided them
 * ALONE_RATIO times as fast as the other, the probe is discarded (its rows
 * stay pending, both replicas go back to the engine's state) and that unit
 * runs the whole batch alone, as its backend runs any batch: co-execution's
 * rounds lost to the faster unit alone at every such point measured
 * (docs/HETERO.md). */
#define PRSTM_POLICY_HETERO_PROBE_ROWS 8192ull
#define PRSTM_POLICY_HETERO_ALONE_RATIO 1.5
/* In a round, once the second unit's part has ended, the first unit (the
 * CPU) has until ROUND_STOP_RATIO times the second's time, and is stopped
 * there; the rows it had not decided wait for a later round. Without it a
 * round waits for the slower unit: in rounds of transfers where the GPU
 * was over 20 times as fast, the first round's CPU half took most of the
 * batch's time (docs/HETERO.md, "Measured"). The environment's
 * PRSTM_HETERO_STOP_RATIO replaces it. */
#define PRSTM_POLICY_HETERO_ROUND_STOP_RATIO 1.25
/* After this many rounds (not only consecutive ones) in which a unit's part was given up to a
 * conflict, the faster unit takes every later round alone. */
#define PRSTM_POLICY_HETERO_SOLO_LOST_ROUNDS 2u
/* Once every row was handed out, rounds of both units go on over the
 * carried rows at most this many times (while they decide some) before
 * unit A runs what is left to the end. */
#define PRSTM_POLICY_HETERO_ROUNDS_AFTER_NEW 4u
/* Backend multi: a round fills every unit's slots but this share of them
 * (1/N), so that a unit whose rows outnumber the others' still fits. */
#define PRSTM_POLICY_MULTI_SLOT_SPARE_PARTS 8u

#endif /* STM_POLICY_H */
