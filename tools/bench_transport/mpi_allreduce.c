/* OpenMPI peer for the all-reduce benchmark: MPI_Allreduce (float, sum), same sizes and
   iteration counts as bench_allreduce_node. Rank 0 prints "BENCH <bytes> <seconds>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (size_t bytes = 4096; bytes <= ((size_t)64 << 20); bytes *= 4) {
    size_t n = bytes / 4;
    float* data = malloc(bytes);
    for (size_t i = 0; i < n; ++i) data[i] = 1.0f;
    int iters = bytes <= (1 << 20) ? 50 : (bytes <= (16 << 20) ? 10 : 5);
    MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double s = (MPI_Wtime() - t0) / iters;
    if (rank == 0) printf("BENCH %zu %g\n", bytes, s);
    free(data);
  }
  MPI_Finalize();
  return 0;
}
