/*
 * avxcheck: do a kernel's system calls and context switches keep a process's vector
 * registers? A User-Mode Linux kernel saves and restores them with ptrace at every system
 * call of its processes, in a buffer the size of the host's XSAVE area.
 *
 * 1. Every ymm register (every zmm where the CPU has AVX-512F) is loaded with a pattern of
 *    its own, a system call is made, and the registers are compared with the pattern, all
 *    in one asm block: sched_yield, then a pipe ping-pong with a child process (each read
 *    blocks, so the kernel switches between the two, with different patterns in each).
 * 2. A chaotic floating-point computation in AVX keeps its state in ymm registers only,
 *    across sched_yield calls, and prints a checksum of its result.
 *
 * Its whole output is the same on any kernel of one CPU: a guest's must equal the host's.
 * Exit status 0 when every register came back intact, 1 otherwise, 2 without AVX.
 * Build: gcc -O2 -Wall -Wextra -Werror -static -o avxcheck avxcheck.c
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define YIELDS 4000
#define ROUND_TRIPS 2000
#define YMM_COUNT 16
#define ZMM_COUNT 32
#define FP_ROUNDS 500
#define FP_STEPS "8"   /* steps of the map before and after the sched_yield of a round */

typedef struct { uint8_t bytes[YMM_COUNT][32]; } __attribute__((aligned(64))) ymm_file;
typedef struct { uint8_t bytes[ZMM_COUNT][64]; } __attribute__((aligned(64))) zmm_file;

static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* A pattern that differs by process, by call and by register. */
static void fill(void *file, size_t size, uint64_t seed)
{
	uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (size_t i = 0; i < size; i += 8) {
		uint64_t word = next_random(&state);
		memcpy((uint8_t *)file + i, &word, 8);
	}
}

#define Y_LOAD(n) "vmovdqu " #n "*32(%[in]), %%ymm" #n "\n\t"
#define Y_STORE(n) "vmovdqu %%ymm" #n ", " #n "*32(%[out])\n\t"
#define Y_EACH(op) op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7) \
	op(8) op(9) op(10) op(11) op(12) op(13) op(14) op(15)

/* Loads every ymm register from in, makes system call nr, stores them all to out. */
static long ymm_syscall(const ymm_file *in, ymm_file *out, long nr, long a1, long a2, long a3)
{
	register long rax __asm__("rax") = nr;
	register long rdi __asm__("rdi") = a1;
	register long rsi __asm__("rsi") = a2;
	register long rdx __asm__("rdx") = a3;

	__asm__ volatile(Y_EACH(Y_LOAD) "syscall\n\t" Y_EACH(Y_STORE)
			 : "+r"(rax)
			 : [in] "r"(in), [out] "r"(out), "r"(rdi), "r"(rsi), "r"(rdx)
			 : "rcx", "r11", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
			   "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
			   "xmm13", "xmm14", "xmm15");
	return rax;
}

#define Z_LOAD(n) "vmovdqu64 " #n "*64(%[in]), %%zmm" #n "\n\t"
#define Z_STORE(n) "vmovdqu64 %%zmm" #n ", " #n "*64(%[out])\n\t"
#define Z_EACH(op) Y_EACH(op) op(16) op(17) op(18) op(19) op(20) op(21) op(22) op(23) \
	op(24) op(25) op(26) op(27) op(28) op(29) op(30) op(31)

/* The same for every zmm register (AVX-512F only). */
__attribute__((target("avx512f")))
static long zmm_syscall(const zmm_file *in, zmm_file *out, long nr, long a1, long a2, long a3)
{
	register long rax __asm__("rax") = nr;
	register long rdi __asm__("rdi") = a1;
	register long rsi __asm__("rsi") = a2;
	register long rdx __asm__("rdx") = a3;

	__asm__ volatile(Z_EACH(Z_LOAD) "syscall\n\t" Z_EACH(Z_STORE)
			 : "+r"(rax)
			 : [in] "r"(in), [out] "r"(out), "r"(rdi), "r"(rsi), "r"(rdx)
			 : "rcx", "r11", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
			   "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
			   "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19",
			   "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
			   "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
	return rax;
}

/* One checked system call: 1 if a register came back changed, 0 if not. */
static int checked(int zmm, uint64_t seed, long nr, long a1, long a2, long a3, long *result)
{
	static ymm_file ymm_in, ymm_out;
	static zmm_file zmm_in, zmm_out;

	if (zmm) {
		fill(&zmm_in, sizeof(zmm_in), seed);
		*result = zmm_syscall(&zmm_in, &zmm_out, nr, a1, a2, a3);
		return memcmp(&zmm_in, &zmm_out, sizeof(zmm_in)) != 0;
	}
	fill(&ymm_in, sizeof(ymm_in), seed);
	*result = ymm_syscall(&ymm_in, &ymm_out, nr, a1, a2, a3);
	return memcmp(&ymm_in, &ymm_out, sizeof(ymm_in)) != 0;
}

/* Reads or writes one byte of a pipe with checked registers; -1 if the call failed. */
static int checked_byte(int zmm, uint64_t seed, long nr, int fd)
{
	char byte = 'x';
	long result;
	int changed = checked(zmm, seed, nr, fd, (long)&byte, 1, &result);
	return result == 1 ? changed : -1;
}

static unsigned yields(int zmm)
{
	unsigned changed = 0;
	long result;
	for (uint64_t i = 0; i < YIELDS; i++)
		changed += checked(zmm, i, SYS_sched_yield, 0, 0, 0, &result);
	return changed;
}

/* Each side reads the other's byte (blocking: the kernel switches) and answers it. */
static unsigned ping_pong_side(int zmm, uint64_t role, int in, int out, int first)
{
	unsigned changed = 0;
	for (uint64_t i = 0; i < ROUND_TRIPS; i++) {
		uint64_t seed = role << 40 | i << 1;
		int sent = 0, received;
		if (first)
			sent = checked_byte(zmm, seed, SYS_write, out);
		received = checked_byte(zmm, seed | 1, SYS_read, in);
		if (!first)
			sent = checked_byte(zmm, seed, SYS_write, out);
		if (sent < 0 || received < 0)
			return ROUND_TRIPS + 1;  /* the pipe failed: counted as a failure */
		changed += sent + received;
	}
	return changed;
}

/* The parent's count and the child's (its exit status, at most 255). */
static unsigned ping_pong(int zmm)
{
	int to_child[2], to_parent[2], status;
	unsigned changed;
	pid_t child;

	if (pipe(to_child) || pipe(to_parent)) {
		perror("avxcheck: pipe");
		return ROUND_TRIPS + 1;
	}
	fflush(stdout);
	child = fork();
	if (child < 0) {
		perror("avxcheck: fork");
		return ROUND_TRIPS + 1;
	}
	if (child == 0) {
		changed = ping_pong_side(zmm, 2, to_child[0], to_parent[1], 0);
		_exit(changed > 255 ? 255 : changed);
	}
	changed = ping_pong_side(zmm, 1, to_parent[0], to_child[1], 1);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return changed + ROUND_TRIPS + 1;
	return changed + WEXITSTATUS(status);
}

/*
 * The logistic map x <- r * x * (1 - x), chaotic for these r: a change to a lane grows
 * until the result differs (2^-50 at round 400 of 500 changes it). 16 doubles (4 ymm registers) take
 * FP_STEPS steps before and after a sched_yield in each round: between rounds the state is
 * in memory, within a round only in ymm0-3.
 */
static double fp_state[16] __attribute__((aligned(32)));

#define LOGISTIC(n) "vsubpd %%ymm" #n ", %%ymm5, %%ymm6\n\t" \
	"vmulpd %%ymm6, %%ymm" #n ", %%ymm" #n "\n\t" \
	"vmulpd %%ymm4, %%ymm" #n ", %%ymm" #n "\n\t"
#define FP_STEP LOGISTIC(0) LOGISTIC(1) LOGISTIC(2) LOGISTIC(3)

static void fp_round(void)
{
	static const double r[4] __attribute__((aligned(32))) = {3.99, 3.97, 3.95, 3.93};
	static const double one[4] __attribute__((aligned(32))) = {1.0, 1.0, 1.0, 1.0};
	register long rax __asm__("rax") = SYS_sched_yield;

	__asm__ volatile(
		"vmovapd 0(%[state]), %%ymm0\n\t"
		"vmovapd 32(%[state]), %%ymm1\n\t"
		"vmovapd 64(%[state]), %%ymm2\n\t"
		"vmovapd 96(%[state]), %%ymm3\n\t"
		"vmovapd (%[r]), %%ymm4\n\t"
		"vmovapd (%[one]), %%ymm5\n\t"
		".rept " FP_STEPS "\n\t" FP_STEP ".endr\n\t"
		"syscall\n\t"
		".rept " FP_STEPS "\n\t" FP_STEP ".endr\n\t"
		"vmovapd %%ymm0, 0(%[state])\n\t"
		"vmovapd %%ymm1, 32(%[state])\n\t"
		"vmovapd %%ymm2, 64(%[state])\n\t"
		"vmovapd %%ymm3, 96(%[state])\n\t"
		"vzeroupper\n\t"
		: "+r"(rax)
		: [state] "r"(fp_state), [r] "r"(r), [one] "r"(one)
		: "rcx", "r11", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
		  "xmm6");
}

static void fp_checksum(void)
{
	uint64_t checksum = 0xcbf29ce484222325ULL;  /* FNV-1a over the result's bytes */
	double sum = 0;

	for (int i = 0; i < 16; i++)
		fp_state[i] = 0.03125 + i * 0.05859375;
	for (int round = 0; round < FP_ROUNDS; round++)
		fp_round();
	for (int i = 0; i < 16; i++) {
		uint8_t bytes[8];
		memcpy(bytes, &fp_state[i], 8);
		for (int j = 0; j < 8; j++)
			checksum = (checksum ^ bytes[j]) * 0x100000001b3ULL;
		sum += fp_state[i];
	}
	printf("avxcheck: avx computation, %d rounds across sched_yield: checksum %016llx, "
	       "sum %.17g\n", FP_ROUNDS, (unsigned long long)checksum, sum);
}

/* AVX (and AVX-512F) as the CPU has them and the kernel enabled them in XCR0. */
static void features(int *avx, int *avx512f)
{
	unsigned eax, ebx, ecx, edx, xcr0_low = 0, xcr0_high;

	*avx = *avx512f = 0;
	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE) || !(ecx & bit_AVX))
		return;
	__asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
	*avx = (xcr0_low & 0x6) == 0x6;  /* SSE and AVX state */
	if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_AVX512F))
		*avx512f = *avx && (xcr0_low & 0xe0) == 0xe0;  /* opmask, ZMM_Hi256, Hi16_ZMM */
}

int main(void)
{
	int avx, avx512f;
	unsigned changed = 0;

	features(&avx, &avx512f);
	printf("avxcheck: avx %s, avx512f %s\n", avx ? "yes" : "no", avx512f ? "yes" : "no");
	if (!avx)
		return 2;
	for (int zmm = 0; zmm <= avx512f; zmm++) {
		unsigned yielded = yields(zmm), switched = ping_pong(zmm);
		printf("avxcheck: %s: %u of %d sched_yield and %u of %d pipe reads and writes "
		       "between 2 processes changed a register\n", zmm ? "zmm0-31" : "ymm0-15",
		       yielded, YIELDS, switched, 4 * ROUND_TRIPS);
		changed += yielded + switched;
	}
	fp_checksum();
	printf("avxcheck: registers intact %d\n", changed == 0);
	return changed != 0;
}
