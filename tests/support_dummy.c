/* keeps the support library non-empty when there are no support_*.c files */
int recon_test_support_dummy;
