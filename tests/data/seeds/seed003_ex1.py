import tensorflow as tf
import numpy as np
import time

def augment_image(image):
  image = tf.image.random_brightness(image, max_delta=0.2)
  image = tf.image.random_flip_left_right(image)
  return image

def load_data(batch_size, num_images=400):
    images = np.random.randint(0, 256, size=(num_images, 256, 256, 3), dtype=np.uint8)
    labels = np.random.randint(0, 10, size=(num_images,))

    dataset = tf.data.Dataset.from_tensor_slices((images, labels))

    def process_example(image, label):
        image = tf.cast(image, tf.float32) / 255.0
        image = augment_image(image)
        return image, label

    dataset = dataset.map(process_example).batch(batch_size)
    return dataset

batch_size = 32
dataset = load_data(batch_size)

start_time = time.time()
for i, (images, labels) in enumerate(dataset):
  if i > 10:
    break;
  pass # Placeholder for model training
end_time = time.time()
print(f"Data loading and augmentation on CPU time: {end_time - start_time:.4f} seconds")

