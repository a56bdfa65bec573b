// The smallest script: return the input unchanged.
input
